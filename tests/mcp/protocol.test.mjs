// The wire protocol, driven raw through child_process: malformed input gets
// JSON-RPC errors and the server keeps serving; notifications get no reply;
// stdin EOF and SIGTERM end it promptly with code 0.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TASKFS_BIN, stopAll } from './helpers.mjs';
import { endProcs } from '../mcp-shared/store.mjs';

// Spawns the server with raw pipes; collects stdout lines as parsed JSON.
function rawServer(t) {
  const dir = mkdtempSync(join(tmpdir(), 'taskfs-mcp-raw-'));
  const child = spawn(TASKFS_BIN, ['mcp', '--state-dir', dir], { stdio: ['pipe', 'pipe', 'pipe'] });
  const messages = [];
  const waiters = [];
  let buf = '';
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  child.stdout.on('data', (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      messages.push(JSON.parse(line)); // every stdout line must be JSON
      for (const w of [...waiters]) w();
    }
  });
  const exited = new Promise((res) => child.on('exit', (code, signal) => res({ code, signal })));
  t.after(async () => { child.kill('SIGKILL'); await stopAll(dir); await endProcs(dir); rmSync(dir, { recursive: true, force: true }); });
  return {
    dir, child, messages, exited, stderr: () => stderr,
    send(obj) {
      if (Buffer.isBuffer(obj)) child.stdin.write(Buffer.concat([obj, Buffer.from('\n')]));
      else child.stdin.write((typeof obj === 'string' ? obj : JSON.stringify(obj)) + '\n');
    },
    async waitFor(n, ms = 120000) { // a guard against a hang (tests/README.md)
      const deadline = Date.now() + ms;
      while (messages.length < n) {
        if (Date.now() > deadline) throw new Error(`got ${messages.length} of ${n} messages; stderr: ${stderr}`);
        await new Promise((r) => { waiters.push(r); setTimeout(r, 100); });
      }
      return messages;
    },
  };
}

test('garbage input gets errors and the server keeps serving', async (t) => {
  const s = rawServer(t);
  s.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '1999-01-01', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } });
  s.send({ jsonrpc: '2.0', method: 'notifications/initialized' }); // no reply
  s.send('this is not json');
  s.send('[{"jsonrpc":"2.0","id":9,"method":"ping"}]');
  s.send('{"jsonrpc":"2.0","id":3}');
  s.send('{"jsonrpc":"1.0","id":4,"method":"ping"}');
  s.send({ jsonrpc: '2.0', id: 5, method: 'server/discover' });
  s.send({ jsonrpc: '2.0', id: 6, method: 'tools/call', params: { name: 'no_such_tool', arguments: {} } });
  s.send({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: 'nope' });
  s.send('"a string"');
  s.send('x'.repeat(5 * 1024 * 1024)); // oversize: skipped without buffering it all
  s.send({ jsonrpc: '2.0', id: 8, method: 'tasks/get', params: { taskId: 'zzzzzzzz-zzzzzz' } });
  s.send({ jsonrpc: '2.0', id: 10, method: 'ping' });
  const m = await s.waitFor(12);
  assert.equal(m[0].id, 1);
  assert.equal(m[0].result.protocolVersion, '2025-11-25', 'unsupported version -> latest');
  assert.equal(m[0].result.serverInfo.name, 'taskfs');
  assert.ok(m[0].result.capabilities.tasks.requests.tools.call);
  assert.equal(m[1].error.code, -32700);
  assert.match(m[1].error.message, /parse error/);
  assert.equal(m[2].error.code, -32600);
  assert.match(m[2].error.message, /batch/);
  assert.equal(m[3].error.code, -32600);
  assert.match(m[3].error.message, /method/);
  assert.equal(m[4].error.code, -32600);
  assert.match(m[4].error.message, /jsonrpc/);
  assert.deepEqual([m[5].id, m[5].error.code], [5, -32601]);
  assert.deepEqual([m[6].id, m[6].error.code], [6, -32602]);
  assert.match(m[6].error.message, /unknown tool/);
  assert.deepEqual([m[7].id, m[7].error.code], [7, -32602]);
  assert.equal(m[8].error.code, -32600);
  assert.equal(m[9].error.code, -32600);
  assert.match(m[9].error.message, /message too large: 5242880 bytes/);
  assert.deepEqual([m[10].id, m[10].error.code], [8, -32602]);
  assert.deepEqual([m[11].id, m[11].result], [10, {}]);
  // Version negotiation echoes a supported version.
  s.send({ jsonrpc: '2.0', id: 11, method: 'initialize', params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } });
  await s.waitFor(13);
  assert.equal(s.messages[12].result.protocolVersion, '2025-03-26');
  // Invalid UTF-8 in the input: a parse error, itself valid JSON.
  s.send(Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":12,"method":"'), Buffer.from([0xff, 0xc3]), Buffer.from('"}')]));
  await s.waitFor(14);
  assert.equal(s.messages[13].error.code, -32700);
  // End of input: exits promptly with 0.
  s.child.stdin.end();
  const { code } = await s.exited;
  assert.equal(code, 0);
  assert.equal(s.messages.length, 14, 'no reply to notifications');
});

test('SIGTERM ends the server cleanly, answering a pending long-poll first', async (t) => {
  const s = rawServer(t);
  s.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'start_managed_task', arguments: { taskKey: 'sleeper', command: ['sleep', '30'], waitMs: 0 } } });
  await s.waitFor(1);
  const taskId = s.messages[0].result.structuredContent.taskId;
  s.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'read_managed_task', arguments: { taskId, waitMs: 50000 } } });
  s.send({ jsonrpc: '2.0', id: 3, method: 'ping' }); // served while the read waits
  await s.waitFor(2);
  assert.equal(s.messages[1].id, 3);
  const t0 = Date.now();
  s.child.kill('SIGTERM');
  const { code } = await s.exited;
  assert.equal(code, 0);
  // Not held by the read's 50 s wait: the bound is that, not a speed.
  assert.ok(Date.now() - t0 < 40000, 'exits without waiting for the read');
  assert.equal(s.messages.length, 3);
  assert.equal(s.messages[2].id, 2);
  assert.ok(['queued', 'running'].includes(s.messages[2].result.structuredContent.state));
  assert.equal(s.messages[2].result.structuredContent.timedOut, true);
});

test('notifications/cancelled drops a waiting request; others are still answered', async (t) => {
  const s = rawServer(t);
  s.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'start_managed_task', arguments: { taskKey: 'w', command: ['sleep', '30'], waitMs: 0 } } });
  await s.waitFor(1);
  const taskId = s.messages[0].result.structuredContent.taskId;
  s.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'read_managed_task', arguments: { taskId, waitMs: 50000 } } });
  s.send({ jsonrpc: '2.0', id: 3, method: 'tasks/result', params: { taskId } });
  s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 2, reason: 'user gave up' } });
  s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 3 } });
  s.send({ jsonrpc: '2.0', id: 4, method: 'ping' });
  await s.waitFor(2);
  assert.equal(s.messages[1].id, 4);
  s.child.stdin.end();
  const { code } = await s.exited;
  assert.equal(code, 0);
  assert.deepEqual(s.messages.map((m) => m.id), [1, 4], 'no reply for the dropped requests');
});

test('stdin from a regular file is served to its end', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'taskfs-mcp-file-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const { writeFileSync, openSync, readFileSync, closeSync } = await import('node:fs');
  const lines = [
    { jsonrpc: '2.0', id: 1, method: 'ping' },
    { jsonrpc: '2.0', id: 2, method: 'tools/list' },
  ].map((m) => JSON.stringify(m)).join('\n'); // no final newline: still served
  writeFileSync(join(dir, 'in'), lines);
  const inFd = openSync(join(dir, 'in'), 'r');
  const outFd = openSync(join(dir, 'out'), 'w');
  const child = spawn(TASKFS_BIN, ['mcp', '--state-dir', join(dir, 'store')], { stdio: [inFd, outFd, 'ignore'] });
  const code = await new Promise((res) => child.on('exit', res));
  closeSync(inFd);
  closeSync(outFd);
  assert.equal(code, 0);
  const out = readFileSync(join(dir, 'out'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(out.map((m) => m.id), [1, 2]);
  assert.equal(out[1].result.tools.length, 5);
});

test('a host that floods requests without reading answers: memory stays bounded, nothing is lost', async (t) => {
  const s = rawServer(t);
  s.child.stdout.pause();
  const n = 12000; // each answer (tools/list) is ~8 KiB: ~90 MiB in all
  const line = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) + '\n';
  for (let i = 0; i < n; i++) s.child.stdin.write(line);
  s.child.stdin.end();
  await new Promise((r) => setTimeout(r, 1500));
  const { readFileSync } = await import('node:fs');
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${s.child.pid}/status`, 'utf8'))[1]);
  assert.ok(rssKb < 64 * 1024, `server RSS ${rssKb} kB while its output is not read`);
  s.child.stdout.resume();
  const { code } = await s.exited;
  assert.equal(code, 0);
  await s.waitFor(n); // the default guard: 90 MiB of answers, read on a busy machine
  assert.equal(s.messages.length, n);
});

const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };

test('one connection, one era: the pin, errors that name the field, and serving on', async (t) => {
  // Legacy: initialize pins; a modern _meta is refused by name.
  const a = rawServer(t);
  a.send({ jsonrpc: '2.0', id: 0, method: 'server/discover', params: { _meta: META } }); // does not pin
  a.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } });
  a.send({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: META } });
  a.send({ jsonrpc: '2.0', id: 3, method: 'ping' });
  const ma = await a.waitFor(4);
  assert.equal(ma[0].result.resultType, 'complete');
  assert.equal(ma[1].result.protocolVersion, '2025-11-25');
  assert.equal(ma[2].error.code, -32602);
  assert.match(ma[2].error.message, /params\._meta\["io\.modelcontextprotocol\/protocolVersion"\] names the other revision/);
  assert.deepEqual(ma[3].result, {});
  // Modern: the first claimed request pins; then the envelope is required.
  const b = rawServer(t);
  b.send({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: META } });
  b.send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
  b.send({ jsonrpc: '2.0', id: 3, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {} } });
  b.send({ jsonrpc: '2.0', id: 4, method: 'tools/list', params: { _meta: { ...META, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } } });
  b.send({ jsonrpc: '2.0', id: 5, method: 'tools/list', params: { _meta: { ...META, 'com.example/pad': 'x'.repeat(200000) } } });
  b.send({ jsonrpc: '2.0', id: 6, method: 'tools/list', params: { _meta: META } });
  const mb = await b.waitFor(6);
  assert.equal(mb[0].result.resultType, 'complete');
  assert.equal(mb[1].error.code, -32602);
  assert.equal(mb[1].error.data.envelope.key, 'io.modelcontextprotocol/protocolVersion');
  assert.equal(mb[2].error.code, -32600);
  assert.equal(mb[3].error.code, -32022);
  assert.deepEqual(mb[3].error.data, { supported: ['2026-07-28'], requested: '2099-01-01' });
  assert.equal(mb[4].error.code, -32602);
  assert.match(mb[4].error.message, /params\._meta is \d+ bytes/);
  assert.equal(mb[5].result.tools.length, 5, 'still serving');
  // The v2 client's discover probe: one request, then EOF; the server exits at once.
  const c = rawServer(t);
  c.send({ jsonrpc: '2.0', id: 'probe', method: 'server/discover', params: { _meta: META } });
  await c.waitFor(1);
  const t0 = Date.now();
  c.child.stdin.end();
  assert.equal((await c.exited).code, 0);
  // Not held by anything (the bound only guards against a hang).
  assert.ok(Date.now() - t0 < 60000, 'exits on EOF');
});
