#!/bin/bash
# cluster.sh: a throwaway single-node Slurm cluster for the tests.
#
#   eval "$(tests/slurm/cluster.sh start [DIR])"   # prints: export SLURM_CONF=... TFS_SLURM_DIR=...
#   tests/slurm/cluster.sh status [DIR]
#   tests/slurm/cluster.sh stop [DIR]
#
# Everything lives under one directory (a fresh mktemp -d unless DIR is given): its own munge key,
# its own munged on its own socket (so a system munged is left alone), slurm.conf, state, spool,
# logs and pid files. Clients need only SLURM_CONF; slurm.conf names the munge socket through
# AuthInfo. Ports are picked free at start, so two clusters can run side by side. DIR defaults to
# $TFS_SLURM_DIR, then to the directory of $SLURM_CONF, for status and stop.
#
# The node "tfsnode" has 2 CPUs whatever the hardware (config_overrides), so a job asking for
# -c 2 keeps the next one pending with reason Resources. Partition "debug" (default) holds the
# node; partition "held" holds it too but is State=DOWN, so any job sent there pends with reason
# PartitionDown. A job that cannot start can also be made with --begin=now+1hour (BeginTime) or
# --hold (JobHeldUser).
#
# Finished jobs stay visible to squeue -t all and scontrol show job for MinJobAge=2 s plus the
# purge cycle (about 8-10 s here); TFS_SLURM_MIN_JOB_AGE changes it. KillWait=5: a job cancelled by
# scancel or its time limit gets SIGTERM, then SIGKILL 5 s later. No accounting (no slurmdbd):
# sacct does not work; jobcomp/filetxt logs every finished job to DIR/log/jobcomp.txt.
#
# stop is safe after a start that half-failed, and after stop: it cancels the jobs, then ends every
# process whose command line names DIR (munged, slurmctld, slurmd) and every slurmstepd with a
# file open under DIR, with their job processes, then removes DIR. It never kills by name alone.
#
# Exit codes: 0 ok, 100 usage, 111 system failure (with the daemon's log tail on stderr).
set -u

NODE=tfsnode
START_TIMEOUT=${TFS_SLURM_START_TIMEOUT:-60}

# die reports a failure and exits 111; during start it first stops whatever start began.
die() {
  echo "cluster.sh $VERB: $*" >&2
  [ -n "${STARTING:-}" ] && cmd_stop "$STARTING" 2> /dev/null
  exit 111
}
usage() { echo "usage: cluster.sh start|stop|status [DIR]" >&2; exit 100; }

# dir_from_env picks the cluster directory for status and stop.
dir_from_env() {
  if [ -n "${1:-}" ]; then echo "$1"; return; fi
  if [ -n "${TFS_SLURM_DIR:-}" ]; then echo "$TFS_SLURM_DIR"; return; fi
  if [ -n "${SLURM_CONF:-}" ]; then dirname "$SLURM_CONF"; return; fi
  echo "cluster.sh $VERB: no cluster named: give DIR, or set TFS_SLURM_DIR or SLURM_CONF" >&2
  exit 100
}

# alive succeeds while PID runs. A zombie counts as gone: init on some machines never reaps
# reparented children, and a zombie holds no port or file.
alive() {
  local st
  st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

# port_free succeeds when nothing listens on TCP port $1.
port_free() { ! ss -Htln "sport = :$1" 2>/dev/null | grep -q .; }

# pick_ports prints two consecutive free ports (slurmctld, slurmd). TFS_SLURM_PORT fixes the
# first; otherwise they are chosen at random in 20000..59999 so parallel clusters rarely collide,
# and a collision that slips through (a daemon fails to bind) makes start try other ports.
pick_ports() {
  local p
  if [ -n "${TFS_SLURM_PORT:-}" ]; then
    p=$TFS_SLURM_PORT
    if port_free "$p" && port_free $((p + 1)); then echo "$p $((p + 1))"; return 0; fi
    echo "cluster.sh start: TCP port $p or $((p + 1)) (TFS_SLURM_PORT) is in use;" \
      "pick others or unset TFS_SLURM_PORT" >&2
    return 1
  fi
  for _ in $(seq 1 50); do
    p=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
    if port_free "$p" && port_free $((p + 1)); then echo "$p $((p + 1))"; return 0; fi
  done
  echo "cluster.sh start: no two free TCP ports found in 20000..59999" >&2
  return 1
}

write_conf() {
  local d=$1 ctld_port=$2 slurmd_port=$3 host
  host=$(hostname -s)
  cat > "$d/slurm.conf" <<EOF
# Written by tests/slurm/cluster.sh; a single-node test cluster under $d.
ClusterName=taskfs
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge/munge.sock
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool/%n
SlurmctldPidFile=$d/run/slurmctld.pid
SlurmdPidFile=$d/run/slurmd.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$d/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SwitchType=switch/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$d/log/jobcomp.txt
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=${TFS_SLURM_MIN_JOB_AGE:-2}
KillWait=5
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=60
MessageTimeout=10
NodeName=$NODE NodeAddr=127.0.0.1 NodeHostname=$host CPUs=2 Sockets=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=1024 State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
PartitionName=held Nodes=$NODE MaxTime=INFINITE State=DOWN
EOF
  : > "$d/plugstack.conf"
}

# log_tail prints the end of every log under DIR, for a failed start.
log_tail() {
  local f
  for f in "$1"/log/*.log "$1"/log/*.out; do
    [ -s "$f" ] || continue
    echo "--- $f" >&2
    tail -n 15 "$f" >&2
  done
}

# spawn runs a daemon in the foreground in its own session, its output into a log, and records
# its pid at once, so stop can find it even if it dies before writing its own pid file.
spawn() {
  local d=$1 name=$2
  shift 2
  setsid "$@" < /dev/null >> "$d/log/$name.out" 2>&1 &
  echo $! > "$d/run/$name.spawned"
}

start_munge() {
  local d=$1
  mkdir -p "$d/munge"
  chmod 755 "$d" "$d/munge" # munged wants its socket's directories searchable by all.
  if [ ! -s "$d/munge/munge.key" ]; then
    mungekey --create --keyfile="$d/munge/munge.key" > /dev/null 2>&1 ||
      dd if=/dev/urandom of="$d/munge/munge.key" bs=128 count=1 status=none ||
      die "cannot create the munge key $d/munge/munge.key"
  fi
  chmod 600 "$d/munge/munge.key"
  spawn "$d" munged munged -F --socket="$d/munge/munge.sock" --key-file="$d/munge/munge.key" \
    --pid-file="$d/run/munged.pid" --seed-file="$d/munge/munged.seed" --log-file="$d/log/munged.log"
  for _ in $(seq 1 600); do # 60 s, a guard against a hang
    if munge -S "$d/munge/munge.sock" -n < /dev/null 2>/dev/null |
      unmunge -S "$d/munge/munge.sock" > /dev/null 2>&1; then return 0; fi
    alive "$(cat "$d/run/munged.spawned")" || break
    sleep 0.1
  done
  log_tail "$d"
  return 1
}

# bind_failed succeeds when a daemon's log says its port was taken.
bind_failed() { grep -qi 'address already in use' "$1"/log/slurmctld.* "$1"/log/slurmd.* 2> /dev/null; }

# start_slurm starts slurmctld and slurmd on free ports and waits until the node is idle; returns
# 2 when a daemon lost its port to someone else, so the caller can retry with others.
start_slurm() {
  local d=$1 ports
  ports=$(pick_ports) || return 1
  # shellcheck disable=SC2086
  write_conf "$d" $ports
  spawn "$d" slurmctld slurmctld -D -c -i -f "$d/slurm.conf"
  for _ in $(seq 1 600); do # 60 s, a guard against a hang
    SLURM_CONF=$d/slurm.conf scontrol ping 2> /dev/null | grep -q 'is UP' && break
    alive "$(cat "$d/run/slurmctld.spawned")" || break
    sleep 0.1
  done
  spawn "$d" slurmd slurmd -D -N "$NODE" -f "$d/slurm.conf"
  wait_idle "$d" && return 0
  [ -z "${TFS_SLURM_PORT:-}" ] && bind_failed "$d" && return 2
  return 1
}

# wait_idle waits until sinfo reports the node idle in partition debug.
wait_idle() {
  local d=$1 deadline=$((SECONDS + START_TIMEOUT)) st
  while [ $SECONDS -lt $deadline ]; do
    st=$(SLURM_CONF=$d/slurm.conf sinfo -h -p debug -n "$NODE" -o %t 2> /dev/null)
    [ "$st" = idle ] && return 0
    for p in slurmctld slurmd munged; do
      alive "$(cat "$d/run/$p.spawned" 2> /dev/null)" || { echo "$p died" >&2; return 1; }
    done
    sleep 0.1
  done
  echo "node $NODE still '${st:-unknown}' after ${START_TIMEOUT}s" >&2
  return 1
}

cmd_start() {
  local d t0 rc
  t0=$EPOCHREALTIME
  [ "$(id -u)" = 0 ] || die "must run as root (slurmd runs jobs as their user)"
  for b in munged mungekey slurmctld slurmd srun sinfo ss; do
    command -v "$b" > /dev/null || die "$b not found: apt-get install -y slurm-wlm munge iproute2"
  done
  if [ -n "${1:-}" ]; then
    d=$1
    mkdir -p "$d" || die "cannot create $d"
    [ -z "$(ls -A "$d" 2>/dev/null)" ] || die "$d is not empty; stop the cluster there first"
  else
    d=$(mktemp -d /tmp/tfs-slurm.XXXXXX) || die "mktemp failed"
  fi
  d=$(cd "$d" && pwd)
  STARTING=$d
  mkdir -p "$d/state" "$d/spool/$NODE" "$d/log" "$d/run"
  start_munge "$d" || die "munged did not come up (output above); nothing is left running"
  for _ in 1 2 3; do
    start_slurm "$d"
    rc=$?
    [ $rc = 2 ] || break
    echo "cluster.sh start: a port was taken, retrying with others" >&2
    kill_daemons "$d" slurmd slurmctld
    rm -rf "$d"/log/slurm* "$d/state" "$d/spool"
    mkdir -p "$d/state" "$d/spool/$NODE"
  done
  if [ $rc != 0 ]; then
    log_tail "$d"
    die "the cluster did not come up (logs above); nothing is left running"
  fi
  STARTING=
  echo "cluster.sh start: cluster up in $d in $(awk "BEGIN{printf \"%.2f\", $EPOCHREALTIME - $t0}")s" >&2
  echo "export SLURM_CONF=$d/slurm.conf TFS_SLURM_DIR=$d"
}

# pids_of_dir prints "KIND PID" for each live daemon of the cluster in DIR: munged, slurmctld or
# slurmd with DIR on its command line, slurmstepd with an open file or cwd under DIR. Only these
# names are considered, so a shell whose command line merely mentions DIR is never touched.
pids_of_dir() {
  local d=$1 f p cmd l
  # One grep reads every command line (a fork per process would take seconds on a busy machine).
  while read -r f; do
    p=${f#/proc/}
    p=${p%/cmdline}
    alive "$p" || continue
    cmd=$(tr '\0' ' ' 2> /dev/null < "$f") || continue
    case "${cmd%% *}" in
      munged | */munged | slurmctld | */slurmctld | slurmd | */slurmd) echo "${cmd%% *} $p" ;;
    esac
  done < <(grep -lsF -- "$d/" /proc/[0-9]*/cmdline)
  while read -r f; do
    p=${f#/proc/}
    p=${p%/comm}
    alive "$p" || continue
    for l in "/proc/$p/cwd" "/proc/$p"/fd/*; do
      case "$(readlink "$l" 2> /dev/null)" in "$d"/*) echo "slurmstepd $p"; break ;; esac
    done
  done < <(grep -lsx slurmstepd /proc/[0-9]*/comm)
}

# descendants prints PID's live descendants (a step's job processes).
descendants() {
  local c
  for c in $(ps -o pid= --ppid "$1" 2> /dev/null); do
    echo "$c"
    descendants "$c"
  done
}

# end_pids sends SIGTERM to PIDS, and SIGKILL to those still alive after 3 s.
end_pids() {
  local p left
  [ $# -gt 0 ] || return 0
  kill -TERM "$@" 2> /dev/null
  for _ in $(seq 1 30); do
    left=""
    for p in "$@"; do alive "$p" && left="$left $p"; done
    [ -z "$left" ] && return 0
    sleep 0.1
  done
  # shellcheck disable=SC2086
  kill -KILL $left 2> /dev/null
  return 0
}

# kill_daemons ends the cluster's processes in an order that keeps each shutdown quick: the steps
# with their job processes, then slurmd (which talks to slurmctld on its way out), then slurmctld,
# then munged. With names, it ends only those daemons, by the pids start recorded.
kill_daemons() {
  local d=$1 k p list pids
  shift
  if [ $# -gt 0 ]; then
    for k in "$@"; do
      p=$(cat "$d/run/$k.spawned" 2> /dev/null) || continue
      # The pid is this cluster's daemon only while its command line names DIR (no pid reuse).
      tr '\0' ' ' 2> /dev/null < "/proc/$p/cmdline" | grep -qF -- "$d/" && end_pids "$p"
    done
    return 0
  fi
  list=$(pids_of_dir "$d")
  for k in slurmstepd slurmd slurmctld munged; do
    pids=""
    for p in $(echo "$list" | awk -v k="$k" '$1 == k || $1 ~ ("/" k "$") {print $2}'); do
      pids="$pids $p"
      [ "$k" = slurmstepd ] && pids="$pids $(descendants "$p")"
    done
    # shellcheck disable=SC2086
    end_pids $pids
  done
}

cmd_stop() {
  local d jobs
  d=$(dir_from_env "${1:-}")
  [ -d "$d" ] || { echo "cluster.sh stop: $d does not exist; nothing to stop" >&2; return 0; }
  case "$d" in / | /tmp | /tmp/) die "refusing to remove $d" ;; esac
  if [ -f "$d/slurm.conf" ] && alive "$(cat "$d/run/slurmctld.spawned" 2> /dev/null)"; then
    jobs=$(SLURM_CONF=$d/slurm.conf timeout 10 squeue -h -o %i 2> /dev/null)
    # shellcheck disable=SC2086
    [ -n "$jobs" ] && SLURM_CONF=$d/slurm.conf timeout 10 scancel $jobs 2> /dev/null
  fi
  kill_daemons "$d"
  # A second pass catches a slurmstepd that outlived slurmd and anything started meanwhile.
  kill_daemons "$d"
  rm -rf "$d"
  echo "cluster.sh stop: stopped and removed $d" >&2
}

cmd_status() {
  local d p rc=0
  d=$(dir_from_env "${1:-}")
  [ -f "$d/slurm.conf" ] || { echo "cluster.sh status: no cluster in $d" >&2; exit 111; }
  for p in munged slurmctld slurmd; do
    if alive "$(cat "$d/run/$p.spawned" 2> /dev/null)"; then
      echo "$p: running (pid $(cat "$d/run/$p.spawned"))"
    else
      echo "$p: not running"
      rc=111
    fi
  done
  SLURM_CONF=$d/slurm.conf timeout 10 sinfo || rc=111
  echo "export SLURM_CONF=$d/slurm.conf TFS_SLURM_DIR=$d"
  exit $rc
}

VERB=${1:-}
if [ $# -lt 1 ] || [ $# -gt 2 ]; then usage; fi
case "$VERB" in
  start) cmd_start "${2:-}" ;;
  stop) cmd_stop "${2:-}" ;;
  status) cmd_status "${2:-}" ;;
  *) usage ;;
esac
