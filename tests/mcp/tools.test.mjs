// The managed-task tools through the official SDK client: idempotent start,
// long-polls, bounded responses, untilPattern, cancel, and two servers on
// one store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeStore, call } from './helpers.mjs';

test('connect and list the tools', async (t) => {
  const store = makeStore(t);
  const { client } = await store.connect();
  const { tools } = await client.listTools();
  const names = tools.map((x) => x.name).sort();
  assert.deepEqual(names, ['cancel_managed_task', 'list_managed_tasks', 'read_managed_task', 'start_managed_task']);
  for (const tool of tools) {
    assert.ok(tool.description.length > 40, tool.name);
    assert.equal(tool.inputSchema.type, 'object');
    assert.equal(tool.outputSchema.type, 'object');
  }
  assert.match(tools.find((x) => x.name === 'read_managed_task').description, /50 s/);
  assert.equal(client.getServerVersion().name, 'taskfs');
  assert.ok(client.getServerCapabilities().tasks.requests.tools.call);
  assert.ok(client.getInstructions().includes('start_managed_task'));
});

test('start twice with the same key runs once; a different command is rejected', async (t) => {
  const store = makeStore(t);
  const { client } = await store.connect();
  const side = join(store.dir, 'side-effect');
  const command = `echo ran >> '${side}'; echo done`;
  const a = await call(client, 'start_managed_task', { taskKey: 'once', command, waitMs: 20000 });
  assert.equal(a.isError, undefined, JSON.stringify(a.content));
  assert.equal(a.structuredContent.state, 'completed');
  assert.equal(a.structuredContent.started, true);
  const b = await call(client, 'start_managed_task', { taskKey: 'once', command, waitMs: 20000 });
  assert.equal(b.structuredContent.taskId, a.structuredContent.taskId);
  assert.equal(b.structuredContent.existing, true);
  assert.match(b.structuredContent.hint, /restart: true/);
  assert.equal(readFileSync(side, 'utf8'), 'ran\n', 'the command ran exactly once');
  // The text block carries the same JSON.
  assert.deepEqual(JSON.parse(b.content[0].text), b.structuredContent);
  const c = await call(client, 'start_managed_task', { taskKey: 'once', command: ['echo', 'other'] });
  assert.equal(c.isError, true);
  assert.match(c.content[0].text, /already names a different command/);
  // restart: true runs it again under the same key, as a new task.
  const d = await call(client, 'start_managed_task', { taskKey: 'once', command, restart: true, waitMs: 20000 });
  assert.notEqual(d.structuredContent.taskId, a.structuredContent.taskId);
  assert.equal(d.structuredContent.state, 'completed');
  assert.equal(readFileSync(side, 'utf8'), 'ran\nran\n');
  // Bad arguments are tool errors that say what to do.
  const e = await call(client, 'start_managed_task', { taskKey: 'bad key!', command: 'true' });
  assert.equal(e.isError, true);
  assert.match(e.content[0].text, /taskKey/);
  const e2 = await call(client, 'read_managed_task', { taskKey: 'a' + 'é'.repeat(100) }); // message cut mid-character
  assert.equal(e2.isError, true);
  assert.match(e2.content[0].text, /is not valid/);
  const f = await call(client, 'start_managed_task', { taskKey: 'k', command: 'true', cwd: 'relative' });
  assert.match(f.content[0].text, /absolute/);
  const g = await call(client, 'read_managed_task', { taskKey: 'nope' });
  assert.equal(g.isError, true);
  assert.match(g.content[0].text, /no task has the key/);
});

test('env values reach the process and never the disk', async (t) => {
  const store = makeStore(t);
  const { client } = await store.connect();
  const r = await call(client, 'start_managed_task', {
    taskKey: 'env', command: 'echo "value=$SECRET_THING"', env: { SECRET_THING: 's3cr3t-v4lue' }, waitMs: 20000,
  });
  assert.equal(r.structuredContent.state, 'completed');
  assert.deepEqual(r.structuredContent.tail, ['value=s3cr3t-v4lue']);
  const rec = readFileSync(join(store.dir, 'tasks', r.structuredContent.taskId, 'record.json'), 'utf8');
  assert.ok(rec.includes('SECRET_THING'));
  assert.ok(!rec.includes('s3cr3t-v4lue'));
});

test('long-poll to completion', async (t) => {
  const store = makeStore(t);
  const { client } = await store.connect();
  const s = await call(client, 'start_managed_task', { taskKey: 'slow', command: 'sleep 1; echo finished', waitMs: 0 });
  assert.ok(['queued', 'running'].includes(s.structuredContent.state));
  const r = await call(client, 'read_managed_task', { taskKey: 'slow', waitMs: 30000 });
  assert.equal(r.structuredContent.state, 'completed');
  assert.equal(r.structuredContent.exitCode, 0);
  assert.equal(r.structuredContent.timedOut, false);
  assert.deepEqual(r.structuredContent.tail, ['finished']);
  assert.ok(r.structuredContent.durationMs >= 900);
  // A failing command reads failed with its exit code.
  const f = await call(client, 'start_managed_task', { taskKey: 'fail', command: 'echo oops; exit 3', waitMs: 20000 });
  assert.equal(f.structuredContent.state, 'failed');
  assert.equal(f.structuredContent.exitCode, 3);
});

test('an early error survives 100,000 lines of noise; the response stays bounded', async (t) => {
  const store = makeStore(t);
  const { client } = await store.connect();
  const command = 'echo "error: the first failure"; seq 1 100000 | sed "s/^/noise line /"; ' +
    'head -c 20000 /dev/zero | tr "\\0" a; echo; printf "\\377\\376 bad utf8\\n"';
  const r = await call(client, 'start_managed_task', { taskKey: 'noisy', command, waitMs: 50000 });
  const sc = r.structuredContent;
  assert.equal(sc.state, 'completed', JSON.stringify(sc).slice(0, 500));
  assert.equal(sc.lines, 100003);
  assert.equal(sc.important.first[0].line, 1);
  assert.match(sc.important.first[0].text, /error: the first failure/);
  const size = JSON.stringify(r).length;
  assert.ok(size <= 4096, `response is ${size} bytes`);
  assert.ok(sc.tail.length >= 1);
  assert.ok(sc.tail.at(-1).includes('\ufffd'), 'invalid UTF-8 sanitised');
  assert.ok(sc.tail.some((l) => /\[cut 19\d\d\d bytes\]/.test(l)), 'long line cut and marked');
  assert.equal(sc.nextLine, 100003);
  // sinceLine pages through the transcript.
  const p = await call(client, 'read_managed_task', { taskKey: 'noisy', sinceLine: 50000, tailLines: 5 });
  assert.equal(p.structuredContent.tailFrom, 50001);
  assert.deepEqual(p.structuredContent.tail, ['noise line 50000', 'noise line 50001', 'noise line 50002', 'noise line 50003', 'noise line 50004']);
  assert.equal(p.structuredContent.nextLine, 50005);
  const p2 = await call(client, 'read_managed_task', { taskKey: 'noisy', sinceLine: p.structuredContent.nextLine, tailLines: 1 });
  assert.deepEqual(p2.structuredContent.tail, ['noise line 50005']);
});

test('untilPattern returns when a new line matches', async (t) => {
  const store = makeStore(t);
  const { client } = await store.connect();
  await call(client, 'start_managed_task', {
    taskKey: 'server', command: 'echo starting; sleep 1; echo "listening on port 8080"; exec sleep 60', waitMs: 0,
  });
  const t0 = Date.now();
  const r = await call(client, 'read_managed_task', { taskKey: 'server', untilPattern: 'listening on port [0-9]+', waitMs: 40000 });
  assert.ok(Date.now() - t0 < 30000);
  assert.equal(r.structuredContent.state, 'running');
  assert.equal(r.structuredContent.timedOut, false);
  assert.equal(r.structuredContent.match.line, 2);
  assert.equal(r.structuredContent.match.text, 'listening on port 8080');
  // A waiting read does not block the others.
  const pending = call(client, 'read_managed_task', { taskKey: 'server', untilPattern: 'never printed', waitMs: 1500 });
  const list = await call(client, 'list_managed_tasks', {});
  assert.equal(list.structuredContent.tasks.length, 1);
  assert.equal(list.structuredContent.tasks[0].state, 'running');
  const timedOut = await pending;
  assert.equal(timedOut.structuredContent.timedOut, true);
  assert.equal(timedOut.structuredContent.match, undefined);
  // start_managed_task takes untilPattern too: every line of the new task
  // counts, even one printed before the server began to watch.
  const t1 = Date.now();
  const st = await call(client, 'start_managed_task', { taskKey: 'ready', command: 'echo ready-now; exec sleep 60', untilPattern: 'ready-now', waitMs: 40000 });
  assert.ok(Date.now() - t1 < 30000);
  assert.equal(st.structuredContent.state, 'running');
  assert.equal(st.structuredContent.match.line, 1);
  const bad = await call(client, 'read_managed_task', { taskKey: 'server', untilPattern: '(unclosed' });
  assert.equal(bad.isError, true);
  assert.match(bad.content[0].text, /not a valid POSIX extended regex/);
});

test('cancel a running task', async (t) => {
  const store = makeStore(t);
  const { client } = await store.connect();
  const s = await call(client, 'start_managed_task', { taskKey: 'long', command: ['sleep', '60'], waitMs: 0 });
  const c = await call(client, 'cancel_managed_task', { taskId: s.structuredContent.taskId });
  assert.equal(c.structuredContent.state, 'cancelled');
  assert.equal(c.structuredContent.stopped, true);
  const again = await call(client, 'cancel_managed_task', { taskKey: 'long' });
  assert.equal(again.isError, undefined);
  assert.equal(again.structuredContent.alreadyEnded, true);
  assert.equal(again.structuredContent.state, 'cancelled');
});

test('a second server lists and cancels the first one\'s task', async (t) => {
  const store = makeStore(t);
  const a = await store.connect();
  const s = await call(a.client, 'start_managed_task', { taskKey: 'shared', command: ['sleep', '60'], waitMs: 0 });
  const id = s.structuredContent.taskId;
  const b = await store.connect();
  const list = await call(b.client, 'list_managed_tasks', {});
  const seen = list.structuredContent.tasks.find((x) => x.taskId === id);
  assert.ok(seen, 'the second instance sees the task');
  const c = await call(b.client, 'cancel_managed_task', { taskKey: 'shared' });
  assert.equal(c.structuredContent.state, 'cancelled');
  const r = await call(a.client, 'read_managed_task', { taskId: id });
  assert.equal(r.structuredContent.state, 'cancelled');
  assert.match(r.structuredContent.reason, /mcp pid/);
  assert.match(b.stderr(), /another live instance .*pid \d+.* 1 task\(s\) running/);
});

test('list pages newest first with a cursor and filters by state', async (t) => {
  const store = makeStore(t);
  const { client } = await store.connect();
  const ids = [];
  for (let i = 0; i < 5; i++) {
    const r = await call(client, 'start_managed_task', { taskKey: `n${i}`, command: i === 2 ? 'exit 1' : 'true', waitMs: 20000 });
    ids.push(r.structuredContent.taskId);
  }
  const p1 = await call(client, 'list_managed_tasks', { limit: 2 });
  assert.deepEqual(p1.structuredContent.tasks.map((x) => x.taskId), [ids[4], ids[3]]);
  const p2 = await call(client, 'list_managed_tasks', { limit: 2, cursor: p1.structuredContent.nextCursor });
  assert.deepEqual(p2.structuredContent.tasks.map((x) => x.taskId), [ids[2], ids[1]]);
  const p3 = await call(client, 'list_managed_tasks', { limit: 2, cursor: p2.structuredContent.nextCursor });
  assert.deepEqual(p3.structuredContent.tasks.map((x) => x.taskId), [ids[0]]);
  assert.equal(p3.structuredContent.nextCursor, undefined);
  const failed = await call(client, 'list_managed_tasks', { state: 'failed' });
  assert.deepEqual(failed.structuredContent.tasks.map((x) => x.taskId), [ids[2]]);
});

test('a server killed mid-call: the task goes on, and runs once', async (t) => {
  const store = makeStore(t);
  const a = await store.connect();
  const side = join(store.dir, 'side-effect');
  const command = `echo ran >> '${side}'; sleep 1; echo done`;
  const inflight = call(a.client, 'start_managed_task', { taskKey: 'k9', command, waitMs: 30000 }).catch((e) => e);
  await new Promise((r) => setTimeout(r, 300));
  process.kill(a.transport.pid, 'SIGKILL');
  assert.ok((await inflight) instanceof Error, 'the call died with its server');
  const b = await store.connect();
  const again = await call(b.client, 'start_managed_task', { taskKey: 'k9', command, waitMs: 30000 });
  assert.equal(again.structuredContent.existing, true);
  const r = await call(b.client, 'read_managed_task', { taskKey: 'k9', waitMs: 30000 });
  assert.equal(r.structuredContent.state, 'completed');
  assert.deepEqual(r.structuredContent.tail, ['done']);
  assert.equal(readFileSync(side, 'utf8'), 'ran\n');
});
