/* taskfs mount: the FUSE view of the store (see docs/mount.md).
 *
 * Without --foreground the verb forks a child that mounts and serves, and
 * waits for it to report "ok" (or an error) over a pipe, so that
 * `taskfs mount X && ls X/tasks` works and every error is printed here,
 * before the shell prompt returns. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/verbs.h"
#include "taskfs/mount.h"

static void usage(FILE *out) {
  fprintf(
      out,
      "usage: taskfs mount [--state-dir DIR] [--foreground|-f] [--allow-other] [MOUNTPOINT]\n"
      "\n"
      "Mounts the store as files: MOUNTPOINT/tasks/<id>/{record.json,transcript,cancel,owner},\n"
      "MOUNTPOINT/by-key/<key>, MOUNTPOINT/owner. The default mount point is\n"
      "$XDG_RUNTIME_DIR/taskfs, else $HOME/taskfs (created if missing). Runs in the\n"
      "background (logging to syslog) unless --foreground (logging to stderr).\n"
      "Unmount with 'taskfs umount MOUNTPOINT'.\n");
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

int cmd_mount(int argc, char **argv) {
  static const struct option longopts[] = {{"state-dir", required_argument, NULL, 's'},
                                           {"foreground", no_argument, NULL, 'f'},
                                           {"allow-other", no_argument, NULL, 'a'},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};
  const char *state_opt = NULL;
  int foreground = 0, allow_other = 0, c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "+fh", longopts, NULL)) != -1) {
    switch (c) {
    case 's':
      state_opt = optarg;
      break;
    case 'f':
      foreground = 1;
      break;
    case 'a':
      allow_other = 1;
      break;
    case 'h':
      usage(stdout);
      return CLI_EXIT_OK;
    default:
      usage(stderr);
      return CLI_EXIT_USAGE;
    }
  }
  if (argc - optind > 1) {
    fprintf(stderr, "taskfs mount: too many arguments\n");
    usage(stderr);
    return CLI_EXIT_USAGE;
  }

  char state[PATH_MAX], state_abs[PATH_MAX], mnt[PATH_MAX], mnt_abs[PATH_MAX], msg[1024];
  int err = tfs_store_resolve(state_opt, state, sizeof state);
  if (err || absolutize(state, state_abs, sizeof state_abs)) {
    fprintf(stderr, "taskfs mount: cannot resolve the state directory: %s\n",
            err ? tfs_strerror(err) : "path too long");
    return CLI_EXIT_USAGE;
  }
  if (optind < argc) {
    snprintf(mnt, sizeof mnt, "%s", argv[optind]);
  } else {
    if (tfs_mount_default_point(mnt, sizeof mnt)) {
      fprintf(stderr, "taskfs mount: no default mount point (neither XDG_RUNTIME_DIR nor HOME "
                      "is set); name one: taskfs mount DIR\n");
      return CLI_EXIT_USAGE;
    }
    /* The default mount point is ours to create; a named one is not. */
    struct stat st;
    if (stat(mnt, &st) && errno == ENOENT && mkdir_p(mnt)) {
      fprintf(stderr, "taskfs mount: cannot create the mount point %s: %s\n", mnt, strerror(errno));
      return CLI_EXIT_SYSTEM;
    }
  }
  if (absolutize(mnt, mnt_abs, sizeof mnt_abs)) {
    fprintf(stderr, "taskfs mount: mount point path too long\n");
    return CLI_EXIT_USAGE;
  }
  if ((err = tfs_mount_check_point(mnt_abs, msg, sizeof msg))) {
    fprintf(stderr, "taskfs mount: %s\n", msg);
    return err == -ENOENT || err == -ENOTDIR ? CLI_EXIT_USAGE : CLI_EXIT_SYSTEM;
  }

  tfs_mount_opts_t opts = {.state_dir = state_abs,
                           .mountpoint = mnt_abs,
                           .allow_other = allow_other,
                           .use_syslog = 0,
                           .ready_fd = -1,
                           .detach = 0};
  if (foreground)
    return tfs_mount_run(&opts) ? CLI_EXIT_SYSTEM : CLI_EXIT_OK;

  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC)) {
    fprintf(stderr, "taskfs mount: cannot create a pipe: %s\n", strerror(errno));
    return CLI_EXIT_SYSTEM;
  }
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "taskfs mount: cannot fork: %s\n", strerror(errno));
    return CLI_EXIT_SYSTEM;
  }
  if (pid == 0) {
    /* The daemon: its own session, no controlling terminal, cwd / so it
     * pins no directory. Errors before "ok" go to the parent. */
    close(pfd[0]);
    setsid();
    if (chdir("/"))
      _exit(CLI_EXIT_SYSTEM); /* "/" always exists; the parent reports the death */
    opts.ready_fd = pfd[1];
    opts.use_syslog = 1;
    opts.detach = 1;
    _exit(tfs_mount_run(&opts) ? CLI_EXIT_SYSTEM : CLI_EXIT_OK);
  }
  close(pfd[1]);
  char line[1024];
  size_t len = 0;
  ssize_t n;
  while (len < sizeof line - 1 &&
         ((n = read(pfd[0], line + len, sizeof line - 1 - len)) > 0 || (n < 0 && errno == EINTR)))
    if (n > 0)
      len += (size_t)n;
  close(pfd[0]);
  line[len] = 0;
  if (!strncmp(line, "ok", 2)) {
    printf("taskfs mount: %s mounted on %s (pid %d); unmount with: taskfs umount %s\n", state_abs,
           mnt_abs, (int)pid, mnt_abs);
    return CLI_EXIT_OK;
  }
  int st;
  waitpid(pid, &st, 0);
  line[strcspn(line, "\n")] = 0;
  fprintf(stderr, "taskfs mount: %s\n",
          !strncmp(line, "error: ", 7) ? line + 7 : "the mount process died before mounting");
  return CLI_EXIT_SYSTEM;
}
