#!/usr/bin/env python3
"""The tail row (issue 26.3): a read_managed_task with tailLines over MCP
stdio, and the open of an HTTP follow from the end (?follow=1&offset=END,
timed to its `event: end`), of one big ended task's transcript (default
1 GiB of 80-byte lines), each against `tail -n 20` of the backing file, in
the same run, interleaved (baseline first in odd rounds, taskfs first in
even ones), so that machine noise hits both alike. With TASKFS_BEFORE set
to an older binary (one without the line index), its figures come in the
same table: before vs after.

    bench/tail.py [SIZE_MB [RUNS]]     defaults 1024 and 5

Environment: TASKFS_BIN (default build/taskfs; it makes the task, so the
transcript has its line index), TASKFS_BEFORE (optional), BENCH_DIR (where
the store goes, default /tmp; needs SIZE_MB of room). Prints a Markdown
table on stdout, progress on stderr. Medians; the verdict of no test
depends on these figures.
"""
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZE_MB = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
AFTER = os.environ.get("TASKFS_BIN", os.path.join(ROOT, "build", "taskfs"))
BEFORE = os.environ.get("TASKFS_BEFORE", "")
BASE = os.environ.get("BENCH_DIR", "/tmp")
TAIL = 20


def log(msg):
    print(f"[tail bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class Mcp:
    """`taskfs mcp` over stdio, initialized."""

    def __init__(self, binary, store):
        self.p = subprocess.Popen([binary, "mcp", "--state-dir", store], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.n = 0
        self.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "bench", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg):
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()

    def call(self, method, params):
        self.n += 1
        self.send({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params})
        while True:
            m = json.loads(self.p.stdout.readline())
            if m.get("id") == self.n:
                return m

    def close(self):
        self.p.stdin.close()
        self.p.wait()


class Serve:
    """`taskfs serve` in the foreground on a port the kernel picks."""

    def __init__(self, binary, store, work):
        self.out = os.path.join(work, f"serve.{os.getpid()}.{id(self)}.out")
        self.p = subprocess.Popen([binary, "serve", "--foreground", "--listen", "127.0.0.1:0",
                                   "--state-dir", store], stdout=open(self.out, "w"),
                                  stderr=subprocess.DEVNULL)
        for _ in range(600):
            text = open(self.out).read()
            m = re.search(r"on http://127\.0\.0\.1:(\d+)", text)
            if m:
                self.port = int(m.group(1))
                break
            time.sleep(0.05)
        else:
            raise SystemExit("taskfs serve did not come up")
        self.token = open(os.path.join(store, "serve.token")).read().strip()

    def follow_end(self, task, offset):
        s = socket.create_connection(("127.0.0.1", self.port))
        s.sendall((f"GET /api/tasks/{task}/transcript?follow=1&offset={offset} HTTP/1.0\r\n"
                   f"Host: 127.0.0.1:{self.port}\r\nAuthorization: Bearer {self.token}\r\n"
                   "Accept: text/event-stream\r\n\r\n").encode())
        got = b""
        while b"event: end" not in got:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
        s.close()
        if b"event: end" not in got:
            raise SystemExit(f"the follow did not end: {got[:300]!r}")

    def close(self):
        self.p.terminate()
        self.p.wait()


def timed(fn):
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1000


def main():
    for b in [AFTER] + ([BEFORE] if BEFORE else []):
        if not os.access(b, os.X_OK):
            raise SystemExit(f"bench/tail.py: {b} is missing: run make")
    work = tempfile.mkdtemp(prefix="taskfs-bench-tail.", dir=BASE)
    store = os.path.join(work, "store")
    try:
        log(f"making a task of {SIZE_MB} MiB of 80-byte lines")
        line = "x" * 79
        out = subprocess.run([AFTER, "run", "--state-dir", store, "--", "sh", "-c",
                              f"yes {line} | head -c {SIZE_MB * 1024 * 1024}"],
                             capture_output=True, text=True, check=True).stdout
        task = out.strip().splitlines()[-1][:15]
        subprocess.run([AFTER, "wait", "--state-dir", store, task], check=True,
                       stdout=subprocess.DEVNULL)
        tx = os.path.join(store, "tasks", task, "transcript")
        size = os.path.getsize(tx)
        subjects = [("after", AFTER)] + ([("before", BEFORE)] if BEFORE else [])
        servers = {name: (Mcp(b, store), Serve(b, store, work)) for name, b in subjects}
        args = {"taskId": task, "tailLines": TAIL, "waitMs": 0}
        samples = {k: [] for k in ["tail"] + [f"{n} {w}" for n, _ in subjects
                                              for w in ("mcp", "follow")]}
        base = lambda: subprocess.run(["tail", "-n", str(TAIL), tx], stdout=subprocess.DEVNULL,
                                      check=True)
        # A first read of each: the page cache holds the file for all alike.
        base()
        for name, _ in subjects:
            servers[name][0].call("tools/call", {"name": "read_managed_task", "arguments": args})
        for r in range(RUNS):
            log(f"round {r + 1} of {RUNS}")
            order = ["tail"] + [n for n, _ in subjects]
            if r % 2:
                order.reverse()
            for who in order:
                if who == "tail":
                    samples["tail"].append(timed(base))
                    continue
                m, s = servers[who]
                samples[f"{who} mcp"].append(timed(lambda: m.call(
                    "tools/call", {"name": "read_managed_task", "arguments": args})))
                samples[f"{who} follow"].append(timed(lambda: s.follow_end(task, size)))
        for m, s in servers.values():
            m.close()
            s.close()
        t = statistics.median(samples["tail"])
        print(f"Tail reads of one ended task's {size / 2**20:.0f} MiB transcript "
              f"({size // 80} lines), median of {RUNS}:\n")
        print("| what | ms | vs `tail -n 20` |")
        print("|---|---:|---:|")
        print(f"| `tail -n {TAIL}` of the file (baseline) | {t:.2f} | 1.0x |")
        for name, _ in subjects:
            for w, what in (("mcp", f"MCP stdio read_managed_task tailLines {TAIL}"),
                            ("follow", "HTTP follow open from the end, to its end event")):
                v = statistics.median(samples[f"{name} {w}"])
                print(f"| {what} ({name}) | {v:.2f} | {v / t:.1f}x |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


main()
