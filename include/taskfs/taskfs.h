/* taskfs: durable tasks on disk.
 *
 * This is the public API of the core store (libtaskfs.a). Every function
 * that can fail returns 0 (or a count) on success and a negative error code
 * on failure: either a negated errno value or one of the TFS_E* codes
 * (taskfs/error.h). tfs_strerror() turns either kind into words.
 *
 * This header only gathers the topic headers below, one per topic; a
 * file that needs one topic may include that header alone.
 *
 * The store layout on disk:
 *
 *   <state>/owner.json              instance record of the newest acquirer
 *   <state>/tasks/<id>/record.json  task record, replaced atomically
 *   <state>/tasks/<id>/transcript   append-only output
 *   <state>/tasks/<id>/cancel       present = stop requested (JSON: by, at)
 *   <state>/tasks/<id>/lock         flock()ed by the supervisor while it lives
 *   <state>/keys/<key>              task key -> task id (file content)
 *
 * Faces never open these by name: they call this API (tfs_task_file_open
 * and friends name task files by role), so the layout is core's alone.
 *
 * Every id or key that comes from outside is checked with tfs_id_valid() or
 * tfs_key_valid() before it touches a path; every file is opened relative to
 * a directory fd with O_NOFOLLOW.
 */
#ifndef TASKFS_TASKFS_H
#define TASKFS_TASKFS_H

/* In the order of the core's layers (docs/ARCHITECTURE.md, "Layers in the
 * build"). */
#include "taskfs/version.h"
#include "taskfs/error.h"
#include "taskfs/clock.h"
#include "taskfs/text.h"
#include "taskfs/ids.h"
#include "taskfs/state.h"
#include "taskfs/limits.h"
#include "taskfs/important.h"
#include "taskfs/record.h"
#include "taskfs/store.h"
#include "taskfs/files.h"
#include "taskfs/task.h"
#include "taskfs/resolve.h"
#include "taskfs/list.h"
#include "taskfs/forget.h"
#include "taskfs/cancel.h"
#include "taskfs/transcript.h"
#include "taskfs/lineidx.h"
#include "taskfs/watch.h"
#include "taskfs/wait.h"
#include "taskfs/serve_token.h"
#include "taskfs/triage.h"
#include "taskfs/queue.h"

#endif /* TASKFS_TASKFS_H */
