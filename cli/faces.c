/* The faces' verbs (mount, umount, mcp, serve) in the binary that loads
 * them on demand: they live in taskfs-faces.so with the stacks only they
 * use (FUSE, libmicrohttpd with GnuTLS and its eight libraries, PCRE2), so
 * every other verb, `run` first, starts without loading 13 shared objects
 * it never calls (issue 28: a start's cost). Each stub opens the plugin
 * and calls the verb of the same name there.
 *
 * The plugin is found from where this binary is, never from the
 * environment: beside it (the build tree) or in ../lib/taskfs/ (make
 * install, the package). Its own symbols bind inside it (-Bsymbolic: its
 * cmd_mount is its own, not this stub); what it uses of core, the
 * supervisor and cli/common.c it takes from this binary (-rdynamic), so
 * there is one copy of each and of its state.
 *
 * Built only with FACES=plugin (the default); FACES=static links the faces
 * into the binary as before (make api-reach). */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/verbs.h"

typedef int (*verb_fn)(int argc, char **argv);

/* Opens the plugin once; NULL with the reason in why. */
static void *faces_open(char *why, size_t size) {
  static const char *const rel[] = {"/taskfs-faces.so", "/../lib/taskfs/taskfs-faces.so"};
  static void *handle;
  char self[PATH_MAX], path[PATH_MAX + 64];
  if (handle)
    return handle;
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  char *slash = n > 0 ? (self[n] = 0, strrchr(self, '/')) : NULL;
  if (!slash) {
    snprintf(why, size, "cannot tell where this binary is (/proc/self/exe)");
    return NULL;
  }
  *slash = 0;
  snprintf(why, size, "taskfs-faces.so is neither beside %s nor in %s/../lib/taskfs", self, self);
  for (size_t i = 0; i < sizeof rel / sizeof *rel && !handle; i++) {
    snprintf(path, sizeof path, "%s%s", self, rel[i]);
    if (access(path, R_OK))
      continue;
    handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle)
      snprintf(why, size, "cannot load %s: %s", path, dlerror());
  }
  return handle;
}

static int face_call(const char *verb, const char *sym, int argc, char **argv) {
  char why[PATH_MAX * 2 + 128];
  void *h = faces_open(why, sizeof why);
  verb_fn fn = h ? (verb_fn)dlsym(h, sym) : NULL;
  if (!fn) {
    if (h)
      snprintf(why, sizeof why, "taskfs-faces.so has no %s: it is from another build", sym);
    cli_error(verb, "%s; reinstall taskfs (make install, or the package)", why);
    return CLI_EXIT_SYSTEM;
  }
  return fn(argc, argv);
}

int cmd_mount(int argc, char **argv) {
  return face_call("mount", "cmd_mount", argc, argv);
}

int cmd_umount(int argc, char **argv) {
  return face_call("umount", "cmd_umount", argc, argv);
}

int cmd_mcp(int argc, char **argv) {
  return face_call("mcp", "cmd_mcp", argc, argv);
}

int cmd_serve(int argc, char **argv) {
  return face_call("serve", "cmd_serve", argc, argv);
}
