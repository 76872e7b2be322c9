#!/usr/bin/env python3
"""The owner's request latency beside idle connections without a token
(issue 26.2; docs/serve.md, "Limits").

Starts `taskfs serve` (TASKFS_BIN, or the binary given with --bin; give
two with --bin A --bin B to compare them in one run) on a fresh store,
opens IDLE (4,100) idle TCP connections to it from another thread that
keeps that many open (a closed one is opened again, as a hostile user
would), then times REQS owner requests, one every EVERY seconds (a fresh
connection each, POST /mcp tools/list with the token). Prints the median, the 90th percentile
and the worst, per binary, and the ratio of the medians.

    python3 bench/serve_idle.py --bin /path/before/taskfs --bin build/taskfs
"""
import argparse
import http.client
import json
import os
import resource
import shutil
import socket
import subprocess
import tempfile
import threading
import time

LIST = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {}}}})


def start(binary):
    d = tempfile.mkdtemp(prefix="taskfs-bench-idle-")
    out = open(os.path.join(d, "out"), "w")
    p = subprocess.Popen([binary, "serve", "--foreground", "--listen", "127.0.0.1:0",
                          "--state-dir", os.path.join(d, "store")],
                         stdout=out, stderr=subprocess.DEVNULL)
    for _ in range(300):
        text = open(os.path.join(d, "out")).read()
        if "log in:" in text:
            break
        time.sleep(0.1)
    port = int(text.split("on http://127.0.0.1:")[1].split()[0])
    token = open(os.path.join(d, "store", "serve.token")).read().strip()
    return p, d, port, token


def owner(port, token, timeout):
    t0 = time.monotonic()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.request("POST", "/mcp", LIST, {
        "Authorization": f"Bearer {token}", "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"})
    r = c.getresponse()
    r.read()
    c.close()
    assert r.status == 200, r.status
    return time.monotonic() - t0


class Idle(threading.Thread):
    """Keeps n idle connections open to port until stopped."""

    def __init__(self, port, n):
        super().__init__(daemon=True)
        self.port, self.n, self.stop, self.socks = port, n, False, []
        self.opened = threading.Event()

    def connect(self):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", self.port))
        return s

    def run(self):
        import selectors
        sel = selectors.DefaultSelector()
        for _ in range(self.n):
            s = self.connect()
            sel.register(s, selectors.EVENT_READ)
        self.opened.set()
        while not self.stop:
            for key, _ in sel.select(0.2):
                s = key.fileobj
                try:
                    data = s.recv(4096)
                except OSError:
                    data = b""
                if not data:
                    sel.unregister(s)
                    s.close()
                    n = self.connect()
                    sel.register(n, selectors.EVENT_READ)
        for key in list(sel.get_map().values()):
            key.fileobj.close()


def measure(binary, idle, reqs, every):
    p, d, port, token = start(binary)
    try:
        owner(port, token, 30)
        th = Idle(port, idle)
        th.start()
        th.opened.wait()
        time.sleep(1)
        times = []
        for _ in range(reqs):  # spread over the idle ones' 30 s timeout cycle
            times.append(owner(port, token, 120))
            time.sleep(max(0.0, every - times[-1]))
        times.sort()
        th.stop = True
        th.join()
        return times
    finally:
        p.terminate()
        p.wait()
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", action="append")
    ap.add_argument("--idle", type=int, default=4100)
    ap.add_argument("--reqs", type=int, default=30)
    ap.add_argument("--every", type=float, default=2.0, help="seconds from one request's start to the next")
    a = ap.parse_args()
    bins = a.bin or [os.environ.get("TASKFS_BIN", "build/taskfs")]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, a.idle + 1000), hard))
    medians = []
    for b in bins:
        t = measure(b, a.idle, a.reqs, a.every)
        med = t[len(t) // 2]
        medians.append(med)
        print(f"{b}: owner request beside {a.idle} idle connections: median {med * 1000:.1f} ms, "
              f"p90 {t[int(len(t) * 0.9) - 1] * 1000:.1f} ms, worst {t[-1] * 1000:.1f} ms ({a.reqs} requests)")
    if len(medians) == 2:
        print(f"ratio of medians (second / first): {medians[1] / medians[0]:.4f}")


if __name__ == "__main__":
    main()
