// The size of tools/list (row 11): what a host puts into the model's
// context on every turn for taskfs's tools, in both revisions.
//
//   node tools_size.mjs TASKFS STATE
//
// Speaks JSON-RPC lines to `taskfs mcp` itself (no SDK: the answer's
// bytes are the figure): 2025-11-25 after initialize, 2026-07-28 with the
// per-request _meta. Prints {"legacy": {bytes, tools}, "modern": {...}}.
// A size is not a timing: the same on any machine.
import { spawn } from "node:child_process";

function die(msg) {
  process.stderr.write(`tools_size.mjs: ${msg}\n`);
  process.exit(1);
}

// Sends the lines, returns the answer to the request with id `want`.
function ask(taskfs, state, lines, want) {
  return new Promise((resolve) => {
    const child = spawn(taskfs, ["mcp", "--state-dir", state], { stdio: ["pipe", "pipe", "inherit"] });
    let buf = "";
    child.stdout.on("data", (d) => {
      buf += d;
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        const m = JSON.parse(line);
        if (m.id === want) {
          child.stdin.end();
          resolve({ bytes: Buffer.byteLength(line), tools: m.result?.tools?.length ?? 0 });
        }
      }
    });
    child.on("exit", (code) => resolve(null));
    for (const l of lines) child.stdin.write(JSON.stringify(l) + "\n");
  });
}

const [taskfs, state] = process.argv.slice(2);
if (!taskfs || !state) die("usage: node tools_size.mjs TASKFS STATE");
const legacy = await ask(taskfs, state, [
  { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "bench", version: "0" } } },
  { jsonrpc: "2.0", method: "notifications/initialized" },
  { jsonrpc: "2.0", id: 2, method: "tools/list" },
], 2);
const meta = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": {},
  "io.modelcontextprotocol/clientInfo": { name: "bench", version: "0" },
};
const modern = await ask(taskfs, state, [{ jsonrpc: "2.0", id: 1, method: "tools/list", params: { _meta: meta } }], 1);
if (!legacy?.tools || !modern?.tools) die("tools/list did not answer with tools");
process.stdout.write(JSON.stringify({ legacy, modern }) + "\n");
