#!/bin/bash
# smoke.sh: the Slurm test cluster works end to end. It starts a cluster (cluster.sh), runs one
# job through srun, checks that stdout and stderr come back on their own streams and that the
# job's exit code is srun's, then stops the cluster and checks nothing of it is left. The cluster
# is stopped on every path out, also on failure or interrupt.
#
# Exit codes: 0 pass, 1 a check failed, 111 the cluster could not be started.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d /tmp/tfs-slurm-smoke.XXXXXX) || exit 111
cluster=""

cleanup() {
  [ -n "$cluster" ] && "$here/cluster.sh" stop "$cluster" 2> /dev/null
  rm -rf "$out"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
  echo "smoke.sh: FAIL: $*" >&2
  for f in "$out"/stdout "$out"/stderr; do [ -f "$f" ] && { echo "--- $f" >&2; cat "$f" >&2; }; done
  exit 1
}

env_line=$("$here/cluster.sh" start) || { echo "smoke.sh: the cluster did not start" >&2; exit 111; }
eval "$env_line"
cluster=$TFS_SLURM_DIR

# The job: one line on each stream, then exit 3. stdin is /dev/null, as a supervisor gives it.
(cd /tmp && srun --unbuffered sh -c 'echo a; echo b >&2; exit 3') \
  < /dev/null > "$out/stdout" 2> "$out/stderr"
rc=$?

[ "$rc" = 3 ] || fail "srun exited $rc, expected the job's exit code 3"
[ "$(cat "$out/stdout")" = a ] || fail "stdout is not exactly the job's one line 'a'"
grep -qx b "$out/stderr" || fail "stderr lacks the job's line 'b'"
grep -q 'srun: error: .*: task 0: Exited with exit code 3' "$out/stderr" ||
  fail "stderr lacks srun's report of the exit code"
grep -qx a "$out/stderr" && fail "the job's stdout leaked into stderr"

"$here/cluster.sh" stop "$cluster" 2> /dev/null || fail "cluster.sh stop failed"
left=$cluster
cluster=""
[ -e "$left" ] && fail "cluster.sh stop left $left behind"
while read -r f; do
  p=${f#/proc/}
  p=${p%/cmdline}
  cmd=$(tr '\0' ' ' 2> /dev/null < "$f") || continue
  case "$cmd" in grep\ *) continue ;; esac # the grep above
  case "$(awk '{print $3}' "/proc/$p/stat" 2> /dev/null)" in
    Z | X | "") ;; # gone, or a zombie that init has not reaped yet
    *) fail "process $p ($cmd) of the cluster survived stop" ;;
  esac
done < <(grep -lsF -- "$left/" /proc/[0-9]*/cmdline)
echo "smoke.sh: ok (srun streamed stdout and stderr apart and exited 3)"
