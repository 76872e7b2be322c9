/* A stand-in supervisor for the tests of the faces: a child that holds a
 * task's lock and records it running, as a real supervisor does, without
 * running anything. */
#include "tests/helpers/standin.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "taskfs/taskfs.h"

/* The child's life: lock, running, then wait (or obey a stop request). */
static void standin_main(const char *state, const char *id, int obey_cancel, int ready_fd) {
  tfs_store_t *s;
  tfs_record_t rec;
  if (tfs_store_open(state, &s) < 0 || tfs_task_lock(s, id) < 0 || tfs_task_load(s, id, &rec) < 0)
    _exit(1);
  rec.state = TFS_RUNNING;
  rec.started_ms = rec.alive_ms = tfs_now_ms();
  rec.supervisor_pid = rec.worker_pid = rec.worker_pgid = getpid();
  if (tfs_task_save(s, &rec) < 0 || write(ready_fd, "r", 1) != 1)
    _exit(1);
  for (;;) {
    struct timespec ts = {0, 10 * 1000 * 1000};
    if (obey_cancel && tfs_cancel_query(s, id, NULL, 0, NULL) == 1) {
      rec.state = TFS_CANCELLED;
      rec.signal = SIGTERM;
      rec.ended_ms = tfs_now_ms();
      tfs_record_set_reason(&rec, "stopped on request");
      tfs_task_save(s, &rec);
      _exit(0);
    }
    nanosleep(&ts, NULL);
  }
}

pid_t tu_standin_supervisor(const char *state, const char *id, int obey_cancel) {
  int p[2];
  if (pipe(p))
    return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    standin_main(state, id, obey_cancel, p[1]);
  }
  close(p[1]);
  char c = 0;
  int ok = pid > 0 && read(p[0], &c, 1) == 1;
  close(p[0]);
  if (pid > 0 && !ok) {
    kill(pid, SIGKILL);
    return -1;
  }
  return pid;
}
