/* taskfs mount: the FUSE view of the store (see docs/mount.md).
 *
 * Without --foreground the verb forks a child that mounts and serves, and
 * waits for it to report "ok" (or an error) over a pipe, so that
 * `taskfs mount X && ls X/tasks` works and every error is printed here,
 * before the shell prompt returns. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/verbs.h"
#include "taskfs/mount.h"

/* The help; the files of a task's directory are named by core's list of
 * views (tfs_view_name), the one the mount serves, so the help cannot
 * miss one (tests/test_cli_terminal.sh compares it with a real mount). */
static const char *usage_text(void) {
  static char text[2048];
  char views[256] = "";
  size_t n = 0;
  for (int v = 0; v < TFS_VIEW_COUNT && n < sizeof views; v++)
    n += (size_t)snprintf(views + n, sizeof views - n, "%s%s", v ? ", " : "",
                          tfs_view_name((tfs_view_t)v));
  snprintf(text, sizeof text,
           "usage: taskfs mount [--state-dir DIR] [--foreground|-f] [--allow-other] "
           "[MOUNTPOINT]\n"
           "\n"
           "Mounts the store as files: MOUNTPOINT/owner, MOUNTPOINT/by-key/<key>,\n"
           "MOUNTPOINT/queues/<name>/{parallel,paused,tasks}, and MOUNTPOINT/tasks/<id>/\n"
           "with %s\n"
           "(stdin only for a task run with --stdin; see taskfs-mount(5)). The default\n"
           "mount point is $XDG_RUNTIME_DIR/taskfs, else $HOME/taskfs (created if\n"
           "missing). Runs in the background (logging to syslog) unless --foreground\n"
           "(logging to stderr). A dead taskfs mount left on MOUNTPOINT (its mount\n"
           "process was killed) is cleared first. Unmount with 'taskfs umount\n"
           "[MOUNTPOINT]'.\n"
           "\n"
           "  -f, --foreground  serve in this process until unmounted or signalled\n"
           "  --allow-other     let other users in (needs user_allow_other in\n"
           "                    /etc/fuse.conf unless run by root)\n"
           "  --state-dir DIR   mount the store in DIR\n"
           "  -h, --help        show this help\n"
           "\n"
           "EXIT STATUS\n"
           "  0 mounted (--foreground: unmounted cleanly), 100 usage (also: MOUNTPOINT\n"
           "  does not exist or is not a directory), 111 the mount failed (a live mount is\n"
           "  already there, no usable /dev/fuse, no fusermount3, ...).\n",
           views);
  return text;
}

/* Makes path absolute against the current directory (the daemon chdirs to
 * /), without requiring it to exist. */
static int absolutize(const char *path, char *out, size_t len) {
  char cwd[PATH_MAX];
  if (path[0] == '/')
    return snprintf(out, len, "%s", path) < (int)len ? 0 : -1;
  if (!getcwd(cwd, sizeof cwd))
    return -1;
  return snprintf(out, len, "%s/%s", cwd, path) < (int)len ? 0 : -1;
}

static int mkdir_p(const char *path) {
  char tmp[PATH_MAX];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1; *p; p++) {
    if (*p == '/') {
      *p = 0;
      if (mkdir(tmp, 0700) && errno != EEXIST)
        return -1;
      *p = '/';
    }
  }
  return mkdir(tmp, 0700) && errno != EEXIST ? -1 : 0;
}

/* The two absolute paths the mount needs: the store's, and the mount
 * point's (the default one is created if missing; a named one must
 * exist). Prints any error and returns an exit code. */
static int mount_paths(const char *state_opt, const char *point, char state_abs[PATH_MAX],
                       char mnt_abs[PATH_MAX]) {
  char state[PATH_MAX], mnt[PATH_MAX], msg[1024];
  int code = cli_store_path("mount", state_opt, state, sizeof state);
  if (code)
    return code;
  if (absolutize(state, state_abs, PATH_MAX)) {
    cli_error("mount", "cannot resolve the state directory: path too long");
    return CLI_EXIT_USAGE;
  }
  if (point) {
    snprintf(mnt, sizeof mnt, "%s", point);
  } else {
    if (fs_mount_default_point(mnt, sizeof mnt)) {
      cli_error("mount", "no default mount point (neither XDG_RUNTIME_DIR nor HOME is set); "
                         "name one: taskfs mount DIR");
      return CLI_EXIT_USAGE;
    }
    /* The default mount point is ours to create; a named one is not. */
    struct stat st;
    if (stat(mnt, &st) && errno == ENOENT && mkdir_p(mnt)) {
      cli_error("mount", "cannot create the mount point %s: %s", mnt, strerror(errno));
      return CLI_EXIT_SYSTEM;
    }
  }
  if (absolutize(mnt, mnt_abs, PATH_MAX)) {
    cli_error("mount", "mount point path too long");
    return CLI_EXIT_USAGE;
  }
  int cleared = 0, err;
  if ((err = fs_mount_check_point(mnt_abs, &cleared, msg, sizeof msg))) {
    cli_error("mount", "%s", msg);
    return err == -ENOENT || err == -ENOTDIR ? CLI_EXIT_USAGE : CLI_EXIT_SYSTEM;
  }
  if (cleared)
    cli_error("mount", "cleared the dead mount on %s (its mount process had died)", mnt_abs);
  return CLI_EXIT_OK;
}

static int mount_child(void *arg, int ready_fd) {
  fs_mount_opts_t *opts = arg;
  opts->ready_fd = ready_fd;
  opts->use_syslog = 1;
  opts->detach = 1;
  return fs_mount_run(opts) ? CLI_EXIT_SYSTEM : CLI_EXIT_OK;
}

/* Forks the daemon that mounts and serves, and returns once it has
 * reported: "ok" (the mount is in place) or an error, printed here. */
static int mount_background(fs_mount_opts_t *opts) {
  char text[1024];
  pid_t pid;
  int code = cli_daemonize("mount", mount_child, opts, 0, text, sizeof text, &pid);
  if (code) {
    cli_error("mount", "%s",
              strcmp(text, "the mount process died before it was ready")
                  ? text
                  : "the mount process died before mounting");
    return CLI_EXIT_SYSTEM;
  }
  printf("taskfs mount: %s mounted on %s (pid %d); unmount with: taskfs umount %s\n",
         opts->state_dir, opts->mountpoint, (int)pid, opts->mountpoint);
  return CLI_EXIT_OK;
}

int cmd_mount(int argc, char **argv) {
  static const struct option opts[] = {{"foreground", no_argument, NULL, 'f'},
                                       {"allow-other", no_argument, NULL, 'a'},
                                       {NULL, 0, NULL, 0}};
  cli_opts_t o = CLI_OPTS("mount", usage_text(), "f", opts);
  o.flags = CLI_OPT_IN_ORDER;
  char state_abs[PATH_MAX], mnt_abs[PATH_MAX];
  int foreground = 0, allow_other = 0, c;
  while ((c = cli_getopt(&o, argc, argv)) > 0) {
    if (c == 'f')
      foreground = 1;
    else
      allow_other = 1; /* --allow-other */
  }
  if (c < 0)
    return o.code;
  if (argc - optind > 1)
    return cli_usage_error("mount", "too many arguments; give at most one MOUNTPOINT");
  int code = mount_paths(o.state_dir, optind < argc ? argv[optind] : NULL, state_abs, mnt_abs);
  if (code)
    return code;
  fs_mount_opts_t mo = {.state_dir = state_abs,
                        .mountpoint = mnt_abs,
                        .allow_other = allow_other,
                        .use_syslog = 0,
                        .ready_fd = -1,
                        .detach = 0};
  if (foreground)
    return fs_mount_run(&mo) ? CLI_EXIT_SYSTEM : CLI_EXIT_OK;
  return mount_background(&mo);
}
