#!/usr/bin/env python3
"""A queue's handover, from its tasks' records: how long a freed slot
takes to start the next task.

    taskfs ls --json | bench/handover.py PARALLEL

Meant for tasks that all waited (queued behind a paused queue, then the
queue resumed): with PARALLEL slots, the k-th start (k > PARALLEL) used the
slot the (k - PARALLEL)-th end gave back, so each gap is the k-th start
minus that end. Prints "p50 p95 n" in ms.
"""
import datetime
import json
import sys


def ms(t):
    return datetime.datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp() * 1000


par = int(sys.argv[1])
recs = [r for r in json.load(sys.stdin) if r.get("started") and r.get("ended")]
starts = sorted(ms(r["started"]) for r in recs)
ends = sorted(ms(r["ended"]) for r in recs)
gaps = sorted(starts[k] - ends[k - par] for k in range(par, len(starts)))
if not gaps:
    sys.exit("handover.py: fewer than %d finished tasks" % (par + 1))
print("%.1f %.1f %d" % (gaps[len(gaps) // 2], gaps[int(len(gaps) * 0.95)], len(gaps)))
