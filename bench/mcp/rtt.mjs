// MCP benchmarks (rows 6 and 8), driven by the official MCP SDK client.
//
//   node rtt.mjs rtt  TASKFS STATE TASKID CALLS RUNS
//     Round trip of read_managed_task on `taskfs mcp` against the `echo`
//     tool of @modelcontextprotocol/server-everything, with the same client
//     code, calls interleaved one by one so machine noise hits both alike.
//   node rtt.mjs list TASKFS STATE RUNS EXPECT
//     The first page of list_managed_tasks on a large store: one fresh
//     server per run (start + initialize + first call), then warm calls.
//   node rtt.mjs follow TASKFS STATE TASKID COUNT OUT TIMEOUT_MS
//     Follow latency of the MCP long-poll (row 4): for each of the COUNT
//     lines "STAMP seq ns" that `bt stamper` writes, one read_managed_task
//     with untilPattern "^STAMP seq " after the line of the last match;
//     appends "seq arrival-stamp" (ns, CLOCK_REALTIME) to OUT, as `bt lat`.
//
// Prints one JSON object on stdout. Any protocol failure, tool error or
// wrong answer exits non-zero with a message: a broken server must fail
// the bench loudly, while timings never do.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

const here = dirname(fileURLToPath(import.meta.url));
const everythingJs = join(here, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");

function die(msg) {
  process.stderr.write(`rtt.mjs: ${msg}\n`);
  process.exit(1);
}

async function connect(name, command, args) {
  const transport = new StdioClientTransport({ command, args, stderr: "pipe" });
  let errText = "";
  transport.stderr?.on("data", (d) => {
    if (errText.length < 8192) errText += d.toString();
  });
  const client = new Client({ name: "taskfs-bench", version: "1.0.0" });
  try {
    await client.connect(transport);
  } catch (e) {
    die(`cannot connect to ${name}: ${e.message}\n${errText}`);
  }
  return { client, transport, name, stderr: () => errText };
}

// Private + shared resident memory of a process, from /proc (kB).
function memOf(pid) {
  try {
    const st = readFileSync(`/proc/${pid}/status`, "utf8");
    const get = (k) => Number((st.match(new RegExp(`^${k}:\\s+(\\d+)`, "m")) || [])[1] || 0);
    return { rssKiB: get("VmRSS"), hwmKiB: get("VmHWM") };
  } catch {
    return { rssKiB: 0, hwmKiB: 0 };
  }
}

function pct(sorted, p) {
  if (!sorted.length) return NaN;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1];
}

function summary(samples) {
  const s = [...samples].sort((a, b) => a - b);
  return { n: s.length, p50: pct(s, 50), p99: pct(s, 99), min: s[0], max: s[s.length - 1] };
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

async function timed(fn) {
  const t0 = process.hrtime.bigint();
  const r = await fn();
  return [Number(process.hrtime.bigint() - t0) / 1e6, r];
}

function checkTool(name, res) {
  if (!res || res.isError) die(`${name} returned an error: ${JSON.stringify(res).slice(0, 500)}`);
  return res;
}

async function rtt(taskfs, state, taskId, calls, runs) {
  const tfs = await connect("taskfs mcp", taskfs, ["mcp", "--state-dir", state]);
  const ref = await connect("server-everything", process.execPath, [everythingJs, "stdio"]);
  const tools = await ref.client.listTools();
  if (!tools.tools.some((t) => t.name === "echo")) die("server-everything has no echo tool");
  const readArgs = { name: "read_managed_task", arguments: { taskId } };
  const echoArgs = { name: "echo", arguments: { message: "hello" } };
  // The first answer is checked for content; warm-up calls are not timed.
  const first = checkTool("read_managed_task", await tfs.client.callTool(readArgs));
  const text = JSON.stringify(first);
  if (!text.includes(taskId)) die(`read_managed_task does not name the task: ${text.slice(0, 300)}`);
  checkTool("echo", await ref.client.callTool(echoArgs));
  for (let i = 0; i < 20; i++) {
    await tfs.client.callTool(readArgs);
    await ref.client.callTool(echoArgs);
  }
  const out = { calls, runs, taskfs: [], everything: [], responseBytes: text.length };
  for (let r = 0; r < runs; r++) {
    const a = [];
    const b = [];
    for (let i = 0; i < calls; i++) {
      // Alternate which server goes first so neither always follows the other.
      const order = i % 2 ? [[tfs, readArgs, a], [ref, echoArgs, b]] : [[ref, echoArgs, b], [tfs, readArgs, a]];
      for (const [s, args, acc] of order) {
        const [ms, res] = await timed(() => s.client.callTool(args));
        checkTool(args.name, res);
        acc.push(ms);
      }
    }
    out.taskfs.push(summary(a));
    out.everything.push(summary(b));
  }
  out.taskfsMem = memOf(tfs.transport.pid);
  out.everythingMem = memOf(ref.transport.pid);
  out.median = {
    taskfs: { p50: median(out.taskfs.map((x) => x.p50)), p99: median(out.taskfs.map((x) => x.p99)) },
    everything: {
      p50: median(out.everything.map((x) => x.p50)),
      p99: median(out.everything.map((x) => x.p99)),
    },
  };
  await tfs.client.close();
  await ref.client.close();
  return out;
}

async function list(taskfs, state, runs, expect) {
  const out = { runs, cold: [], warm: [], startup: [], mem: [] };
  for (let r = 0; r < runs; r++) {
    const [startMs, s] = await timed(() => connect("taskfs mcp", taskfs, ["mcp", "--state-dir", state]));
    const [coldMs, res] = await timed(() => s.client.callTool({ name: "list_managed_tasks", arguments: {} }));
    checkTool("list_managed_tasks", res);
    const sc = res.structuredContent || JSON.parse(res.content?.[0]?.text || "{}");
    const items = sc.tasks || sc.items || [];
    if (!Array.isArray(items) || items.length === 0)
      die(`list_managed_tasks returned no tasks on a store of ${expect}: ${JSON.stringify(res).slice(0, 300)}`);
    if (r === 0) {
      out.pageSize = items.length;
      out.hasCursor = Boolean(sc.nextCursor || sc.cursor);
      out.total = sc.total ?? null;
    }
    const [warmMs] = await timed(() => s.client.callTool({ name: "list_managed_tasks", arguments: {} }));
    out.startup.push(startMs);
    out.cold.push(coldMs);
    out.warm.push(warmMs);
    out.mem.push(memOf(s.transport.pid));
    await s.client.close();
  }
  out.median = { startup: median(out.startup), cold: median(out.cold), warm: median(out.warm) };
  out.maxHwmKiB = Math.max(...out.mem.map((m) => m.hwmKiB));
  return out;
}

// Realtime in ns, with the microseconds performance.now() has (Date.now()
// alone is whole milliseconds).
function realNs() {
  return BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6));
}

async function follow(taskfs, state, taskId, count, out, timeoutMs) {
  const s = await connect("taskfs mcp", taskfs, ["mcp", "--state-dir", state]);
  const deadline = Date.now() + timeoutMs;
  let since = 0;
  const lines = [];
  for (let seq = 0; seq < count; seq++) {
    const left = deadline - Date.now();
    if (left <= 0) die(`only ${seq} of ${count} stamped lines arrived in ${timeoutMs} ms`);
    const res = await s.client.callTool({
      name: "read_managed_task",
      arguments: { taskId, untilPattern: `^STAMP ${seq} `, sinceLine: since, waitMs: Math.min(left, 50000), tailLines: 0 },
    });
    const now = realNs();
    checkTool("read_managed_task", res);
    const m = res.structuredContent?.match;
    if (!m) {
      if (Date.now() < deadline) {
        seq--; /* the long-poll ran out before the line came: ask again */
        continue;
      }
      die(`no match for STAMP ${seq}: ${JSON.stringify(res.structuredContent).slice(0, 300)}`);
    }
    const stamp = BigInt(m.text.split(" ")[2]);
    lines.push(`${seq} ${now - stamp}\n`);
    since = m.line;
  }
  await s.client.close();
  const { appendFileSync } = await import("node:fs");
  appendFileSync(out, lines.join(""));
  return { count, out };
}

const [mode, ...rest] = process.argv.slice(2);
let result;
if (mode === "rtt" && rest.length === 5) {
  result = await rtt(rest[0], rest[1], rest[2], Number(rest[3]), Number(rest[4]));
} else if (mode === "list" && rest.length === 4) {
  result = await list(rest[0], rest[1], Number(rest[2]), Number(rest[3]));
} else if (mode === "follow" && rest.length === 6) {
  result = await follow(rest[0], rest[1], rest[2], Number(rest[3]), rest[4], Number(rest[5]));
} else {
  die(
    "usage: node rtt.mjs rtt TASKFS STATE TASKID CALLS RUNS | list TASKFS STATE RUNS EXPECT | " +
      "follow TASKFS STATE TASKID COUNT OUT TIMEOUT_MS",
  );
}
process.stdout.write(JSON.stringify(result) + "\n");
process.exit(0);
