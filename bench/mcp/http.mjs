// MCP over HTTP benchmarks (rows 9 and 10), the official SDK client
// (1.32.2, Streamable HTTP) against `taskfs serve` and the reference
// @modelcontextprotocol/server-everything (`streamableHttp`), same run.
//
//   node http.mjs load TASKFS STATE TASKID CLIENTS CALLS RUNS
//     CLIENTS concurrent keep-alive clients (a session each), each making
//     CALLS sequential calls: read_managed_task {taskId} on taskfs, echo
//     on server-everything. Requests/s and latency p50/p99 per run; the
//     servers take turns, the order rotated between runs.
//   node http.mjs idle TASKFS STATE CONNS
//     CONNS idle keep-alive connections (each made one request with the
//     token, then stays open: connections without it are capped at 256,
//     issue 26.2, bench/serve_idle.py): the server's RSS before and with
//     them, and the time to the first byte of a real client's request
//     beside them against the same request with none open.
//
// Traffic goes to 127.0.0.1 only (run.sh runs this in a network namespace
// of its own, since server-everything listens on every interface). Prints
// one JSON object; a broken server or a wrong answer exits non-zero.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import net from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const everythingJs = join(here, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");

function die(msg) {
  process.stderr.write(`http.mjs: ${msg}\n`);
  process.exit(1);
}

const memOf = (pid) => {
  const st = readFileSync(`/proc/${pid}/status`, "utf8");
  const get = (k) => Number((st.match(new RegExp(`^${k}:\\s+(\\d+)`, "m")) || [])[1] || 0);
  return { rssKiB: get("VmRSS"), hwmKiB: get("VmHWM") };
};

// Starts a server and resolves once it listens: { name, url, headers, pid, stop }.
function startTaskfs(bin, state) {
  const p = spawn(bin, ["serve", "--foreground", "--listen", "127.0.0.1:0", "--state-dir", state], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "", err = "";
  p.stderr.on("data", (d) => (err += d));
  return new Promise((resolve, reject) => {
    p.on("exit", (c) => reject(new Error(`taskfs serve exited ${c}: ${err}`)));
    p.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/on (http:\/\/127\.0\.0\.1:(\d+))/);
      if (!m || !out.includes("log in:")) return;
      const token = readFileSync(join(state, "serve.token"), "utf8").trim();
      p.removeAllListeners("exit");
      resolve({ name: "taskfs", url: `${m[1]}/mcp`, port: Number(m[2]), headers: { Authorization: `Bearer ${token}` }, pid: p.pid,
        stop: () => new Promise((r) => { p.on("exit", r); p.kill("SIGTERM"); }) });
    });
  });
}

function startEverything(port) {
  const p = spawn(process.execPath, [everythingJs, "streamableHttp"], { env: { ...process.env, PORT: String(port) }, stdio: ["ignore", "pipe", "pipe"] });
  let err = "";
  return new Promise((resolve, reject) => {
    p.on("exit", (c) => reject(new Error(`server-everything exited ${c}: ${err}`)));
    p.stderr.on("data", (d) => {
      err += d;
      if (!/listening on port/.test(err)) return;
      p.removeAllListeners("exit");
      resolve({ name: "everything", url: `http://127.0.0.1:${port}/mcp`, port, headers: {}, pid: p.pid,
        stop: () => new Promise((r) => { p.on("exit", r); p.kill("SIGTERM"); }) });
    });
  });
}

async function clientsOf(srv, n) {
  const cs = [];
  for (let i = 0; i < n; i++) {
    const c = new Client({ name: "taskfs-bench-http", version: "1.0.0" });
    await c.connect(new StreamableHTTPClientTransport(new URL(srv.url), { requestInit: { headers: srv.headers } }));
    cs.push(c);
  }
  return cs;
}

const pct = (s, p) => s[Math.min(s.length, Math.max(1, Math.ceil((p / 100) * s.length))) - 1];

// One run against one server: every client makes its calls; returns req/s, p50, p99.
async function burst(clients, calls, call) {
  const lat = [];
  const t0 = process.hrtime.bigint();
  await Promise.all(clients.map(async (c) => {
    for (let i = 0; i < calls; i++) {
      const a = process.hrtime.bigint();
      await call(c);
      lat.push(Number(process.hrtime.bigint() - a) / 1e6);
    }
  }));
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  lat.sort((x, y) => x - y);
  return { rps: lat.length / secs, p50: pct(lat, 50), p99: pct(lat, 99) };
}

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

async function load([bin, state, taskId, nclients, ncalls, nruns]) {
  const [N, CALLS, RUNS] = [Number(nclients), Number(ncalls), Number(nruns)];
  const tf = await startTaskfs(bin, state);
  const ev = await startEverything(tf.port + 1 > 65000 ? 39001 : tf.port + 1);
  const calls = {
    taskfs: async (c) => {
      const r = await c.callTool({ name: "read_managed_task", arguments: { taskId } });
      if (r.isError || r.structuredContent?.state !== "completed") die(`taskfs: ${JSON.stringify(r).slice(0, 300)}`);
    },
    everything: async (c) => {
      const r = await c.callTool({ name: "echo", arguments: { message: "hello" } });
      if (r.isError || !/hello/.test(r.content?.[0]?.text ?? "")) die(`everything: ${JSON.stringify(r).slice(0, 300)}`);
    },
  };
  const cl = { taskfs: await clientsOf(tf, N), everything: await clientsOf(ev, N) };
  for (const k of Object.keys(cl)) await burst(cl[k], 5, calls[k]); // warm-up
  const runs = { taskfs: [], everything: [] };
  for (let r = 0; r < RUNS; r++) {
    const order = r % 2 ? ["everything", "taskfs"] : ["taskfs", "everything"];
    for (const k of order) runs[k].push(await burst(cl[k], CALLS, calls[k]));
  }
  const mem = { taskfs: memOf(tf.pid), everything: memOf(ev.pid) };
  for (const k of Object.keys(cl)) for (const c of cl[k]) await c.close().catch(() => {});
  await tf.stop();
  await ev.stop();
  const med = (k) => ({ rps: median(runs[k].map((x) => x.rps)), p50: median(runs[k].map((x) => x.p50)), p99: median(runs[k].map((x) => x.p99)) });
  console.log(JSON.stringify({ clients: N, calls: CALLS, runs, median: { taskfs: med("taskfs"), everything: med("everything") }, mem }));
}

// N idle keep-alive connections, each after one request to path with the
// header lines hdrs.
function idleConns(port, n, path, hdrs = "") {
  const socks = [];
  return new Promise((resolve, reject) => {
    let done = 0;
    for (let i = 0; i < n; i++) {
      const s = net.connect(port, "127.0.0.1", () => s.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${hdrs}\r\n`));
      s.once("data", () => { if (++done === n) resolve(socks); });
      s.on("error", reject);
      socks.push(s);
    }
  });
}

// Time to the first byte of a tools/list POST on a fresh connection.
function firstByte(srv, body, extra) {
  return new Promise((resolve, reject) => {
    const a = process.hrtime.bigint();
    const s = net.connect(srv.port, "127.0.0.1", () => {
      const h = Object.entries({ ...srv.headers, ...extra }).map(([k, v]) => `${k}: ${v}\r\n`).join("");
      s.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${srv.port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n${h}Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    });
    s.once("data", (d) => {
      const ms = Number(process.hrtime.bigint() - a) / 1e6;
      if (!/^HTTP\/1\.1 200/.test(d.toString())) reject(new Error(`first byte: ${d.toString().slice(0, 200)}`));
      s.destroy();
      resolve(ms);
    });
    s.on("error", reject);
  });
}

async function idle([bin, state, nconns]) {
  const N = Number(nconns);
  const tf = await startTaskfs(bin, state);
  const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: { _meta: {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} } } });
  const extra = { "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list" };
  const fb = async () => { const xs = []; for (let i = 0; i < 200; i++) xs.push(await firstByte(tf, body, extra)); xs.sort((a, b) => a - b); return { p50: pct(xs, 50), p99: pct(xs, 99) }; };
  const fbNone = await fb();
  const before = memOf(tf.pid);
  const socks = await idleConns(tf.port, N, "/api/tasks?limit=1", `Authorization: ${tf.headers.Authorization}\r\n`);
  const withConns = memOf(tf.pid);
  const fbBeside = await fb();
  for (const s of socks) s.destroy();
  await tf.stop();
  console.log(JSON.stringify({ conns: N, before, withConns, perConnKiB: (withConns.rssKiB - before.rssKiB) / N, firstByte: { none: fbNone, beside: fbBeside } }));
}

const [mode, ...args] = process.argv.slice(2);
if (mode === "load") await load(args);
else if (mode === "idle") await idle(args);
else die("usage: node http.mjs load TASKFS STATE TASKID CLIENTS CALLS RUNS | idle TASKFS STATE CONNS");
