/* What the Slurm executor's files share (exec_slurm.c, slurm_check.c).
 * Private to supervisor/. */
#ifndef TASKFS_SUPERVISOR_SLURM_H
#define TASKFS_SUPERVISOR_SLURM_H

#include <stddef.h>

struct sup_s;

#define SUP_SLURM_HELPER_MS 3000 /* the longest a client may take */

/* Before a job: slurmctld answers `scontrol ping`, and prolog gets the
 * site's SrunProlog ("" for none, "?" when the controller did not say),
 * both cached in the store for a while (slurm_check.c). 0, or -1 with why
 * the controller is not usable (the client's last word). */
int sup_slurm_check(struct sup_s *s, const char *scontrol, char *const *env, char *prolog,
                    size_t len, char *why, size_t whylen);

/* The last non-empty line of a client's output, for a message (its last
 * word is its verdict: "fatal: ...", "... is DOWN"); trims text's end. */
const char *sup_slurm_last_line(char *text);

#endif
