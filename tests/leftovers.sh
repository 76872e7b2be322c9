#!/bin/bash
# What the test suite leaves behind: the check at the end of `make test`
# (and so of `make check`). Every test ends what it started, also when it
# fails; this finds what one did not, prints it, ends it, and fails.
#
# Usage: tests/leftovers.sh mark  MARKFILE
#        tests/leftovers.sh check MARKFILE ROOT
#
# mark, before the suite: notes the test directories that exist already
# (/tmp/taskfs-*, /dev/shm/taskfs-*), so that check knows which ones the
# suite made. check, after it; it looks for:
#   - processes of the suite: any process started since mark that runs a
#     binary of the tree ROOT (taskfs and its supervisors, servers and
#     mounts, the test programs) or carries the suite's TASKFS_TEST_RUN in
#     its environment, and every descendant of those (the tasks); a mount
#     or a server of this tree that ran before (make run) is not touched;
#   - mounts under a test directory the suite made whose daemon is dead
#     or was one of those processes;
#   - test users (tfst*, taskfs-t*: tests/hardening/users.h,
#     tests/test_user.sh), looked for under /tmp/taskfs-global.lock, which
#     the tests that make users hold while they exist.
# Each is printed and ended (SIGKILL to the process and its group; umount
# -l; userdel). Exit 1 when anything was found, 0 when nothing was.
# Only what the suite started is touched: another checkout's processes run
# binaries of another tree, and carry another TASKFS_TEST_RUN.
set -u
what=${1:-}
mark=${2:?usage: leftovers.sh mark|check MARKFILE [ROOT]}

test_dirs() {
  for d in /tmp/taskfs-* /dev/shm/taskfs-*; do [ -e "$d" ] && echo "$d"; done
}

# Now, in clock ticks since boot: the start time /proc/PID/stat gives.
ticks() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%d\n", $1 * hz }' /proc/uptime; }

if [ "$what" = mark ]; then
  test_dirs >"$mark"
  ticks >"$mark.start"
  exit 0
fi
[ "$what" = check ] || { echo "usage: leftovers.sh mark|check MARKFILE [ROOT]" >&2; exit 100; }
root=${3:?usage: leftovers.sh check MARKFILE ROOT}
root=$(cd "$root" && pwd -P)
run=${TASKFS_TEST_RUN:-}
# Fields of /proc/PID/stat after the command's ')': state, ppid, pgrp.
stat_field() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f"$2"; }
self_pg=$(stat_field $$ 3)

# The suite's processes (by binary or by environment) and their
# descendants (a supervisor's task, a server's children); not this script,
# its children, nor its ancestors (make, the recipe's shell), which carry
# TASKFS_TEST_RUN too. One perl over /proc (perl-base is in every Debian):
# a command per process takes seconds on a loaded machine.
since=$(cat "$mark.start" 2>/dev/null || echo 0)
procs=$(ROOT=$root RUN=$run SELF=$$ SINCE=$since perl -e '
  my (%ppid, %seed);
  for my $d (glob "/proc/[0-9]*") {
    my ($p) = $d =~ m{(\d+)$};
    open(my $f, "<", "$d/stat") or next;
    my $st = <$f>;
    close $f;
    $st =~ s/.*\) // or next;
    my @f = split / /, $st;
    next if $f[0] eq "Z";
    $ppid{$p} = $f[1];
    next if $f[19] < $ENV{SINCE}; # started before the suite
    my $exe = readlink("$d/exe") // "";
    if (index($exe, "$ENV{ROOT}/") == 0) { $seed{$p} = 1; next; }
    next unless $ENV{RUN} ne "" && open(my $e, "<", "$d/environ");
    local $/;
    my $env = <$e> // "";
    $seed{$p} = 1 if grep { $_ eq "TASKFS_TEST_RUN=$ENV{RUN}" } split /\0/, $env;
  }
  my %skip;
  for (my $p = $ENV{SELF}; $p && $p > 1; $p = $ppid{$p}) { $skip{$p} = 1; }
  for my $p (keys %ppid) { # the descendants of this script
    for (my $q = $p; $q && $q > 1; $q = $ppid{$q}) { if ($q == $ENV{SELF}) { $skip{$p} = 1; last; } }
  }
  my %found = map { $_ => 1 } grep { !$skip{$_} } keys %seed;
  for (my $more = 1; $more;) {
    $more = 0;
    for my $p (keys %ppid) {
      next if $found{$p} || $skip{$p} || !$found{$ppid{$p}};
      $found{$p} = 1;
      $more = 1;
    }
  }
  print join(" ", sort { $a <=> $b } keys %found), "\n";
')

status=0
if [ -n "$procs" ]; then
  status=1
  echo "leftovers: processes the test suite started are still running:"
  # shellcheck disable=SC2086
  ps -o pid=,pgid=,user=,etime=,args= -p "$(echo $procs | tr ' ' ,)" | sed 's/^/  /'
  for p in $procs; do
    pg=$(stat_field "$p" 3)
    [ -n "$pg" ] && [ "$pg" -gt 1 ] && [ "$pg" != "$self_pg" ] && kill -KILL -- "-$pg" 2>/dev/null
    kill -KILL "$p" 2>/dev/null
  done
  for _ in $(seq 300); do # a bound of 30 s for the kernel to end them
    alive=""
    for p in $procs; do
      st=$(stat_field "$p" 1)
      [ -n "$st" ] && [ "$st" != Z ] && alive="$alive $p"
    done
    [ -z "$alive" ] && break
    sleep 0.1
  done
  [ -n "${alive:-}" ] && echo "leftovers: still alive after SIGKILL:$alive"
fi

# Mounts under the test directories the suite made: with their daemons
# gone (ended above, or dead before), they answer ENOTCONN.
new_dirs=$(test_dirs | grep -vxF -f "$mark" 2>/dev/null || test_dirs)
mounts=""
if [ -n "$new_dirs" ]; then
  while read -r mp; do
    [ -n "$mp" ] || continue
    if ! stat "$mp" >/dev/null 2>&1; then mounts="$mounts$mp"$'\n'; fi
  done < <(awk '{ print $2 }' /proc/self/mounts | while read -r mp; do
    mp=$(printf '%b' "$mp")
    while read -r d; do case $mp in "$d"/*) echo "$mp"; break ;; esac; done <<<"$new_dirs"
  done)
fi
if [ -n "$mounts" ]; then
  status=1
  echo "leftovers: mounts of the test suite are still mounted:"
  printf '%s' "$mounts" | sed 's/^/  /'
  printf '%s' "$mounts" | sort -r | while read -r mp; do umount -l "$mp" 2>/dev/null; done
fi

# Test users, under the lock their tests hold while they exist.
users=$(flock -w 600 /tmp/taskfs-global.lock getent passwd | cut -d: -f1 | grep -E '^(tfst|taskfs-t)[0-9]')
if [ -n "$users" ]; then
  status=1
  echo "leftovers: test users still exist:" $users
  for u in $users; do
    pkill -KILL -u "$u" 2>/dev/null
    userdel -r "$u" >/dev/null 2>&1 || userdel "$u" >/dev/null 2>&1
  done
fi

if [ $status -ne 0 ]; then
  echo "leftovers: FAILED: a test did not end what it started (see tests/README.md)"
else
  echo "leftovers: none (no process, mount or test user of the suite is left)"
fi
exit $status
