// Queues, dependencies, delayed starts and the control of a running task
// through the MCP tools (issue 18), written once and run by both clients:
// tests/mcp (SDK 1.x, 2025-11-25) and tests/mcp2 (the v2 client pinned to
// 2026-07-28) call queueBehaviours() with their own helpers. A queue's
// limit is set with the CLI (`taskfs queue set`), as a user would.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export function queueBehaviours(test, { makeStore, call, bin }) {
  const taskfs = (dir, ...args) =>
    execFileSync(bin, [...args], { env: { ...process.env, TASKFS_STATE_DIR: dir }, encoding: 'utf8' });
  // A shell command that waits until the file gate exists in dir.
  const gated = (dir, then = 'true') => `while [ ! -e '${join(dir, 'gate')}' ]; do sleep 0.05; done; ${then}`;
  const read = async (client, taskId, waitMs = 30000) =>
    (await call(client, 'read_managed_task', { taskId, waitMs })).structuredContent;
  const listed = async (client, taskId) =>
    (await call(client, 'list_managed_tasks', { limit: 500 })).structuredContent.tasks.find((x) => x.taskId === taskId);
  // Polls list_managed_tasks until the task's row satisfies ok.
  const until = async (client, taskId, ok, what) => {
    for (let i = 0; i < 2400; i++) { // 120 s: a guard against a hang
      const row = await listed(client, taskId);
      if (row && ok(row)) return row;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.fail(`task ${taskId} never ${what}: ${JSON.stringify(await listed(client, taskId))}`);
  };

  test('a queue runs its tasks in order, at most its limit at once; list shows queue and position', async (t) => {
    const store = makeStore(t);
    const { client } = await store.connect();
    taskfs(store.dir, 'queue', 'set', 'q', '--parallel', '1');
    const order = join(store.dir, 'order');
    const a = await call(client, 'start_managed_task', { taskKey: 'k1', command: gated(store.dir, `echo a >> '${order}'`), queue: 'q', waitMs: 0 });
    assert.equal(a.isError, undefined, JSON.stringify(a.content));
    const b = await call(client, 'start_managed_task', { taskKey: 'k2', command: `echo b >> '${order}'`, queue: 'q', waitMs: 0 });
    const c = await call(client, 'start_managed_task', { taskKey: 'k3', command: `echo c >> '${order}'`, queue: 'q', waitMs: 0 });
    const [ia, ib, ic] = [a, b, c].map((r) => r.structuredContent.taskId);
    await until(client, ia, (x) => x.state === 'running', 'ran');
    const rb = await until(client, ib, (x) => x.position === 1, 'was 1st');
    assert.equal(rb.state, 'queued');
    assert.equal(rb.queue, 'q');
    const rc = await until(client, ic, (x) => x.position === 2, 'was 2nd');
    assert.equal(rc.state, 'queued');
    const ra = await listed(client, ia);
    assert.equal(ra.queue, 'q');
    assert.equal(ra.position, null);
    writeFileSync(join(store.dir, 'gate'), '');
    assert.equal((await read(client, ic)).state, 'completed');
    assert.equal(readFileSync(order, 'utf8'), 'a\nb\nc\n');
    const bad = await call(client, 'start_managed_task', { taskKey: 'k4', command: 'true', queue: 'a/b' });
    assert.equal(bad.isError, true);
    assert.match(bad.content[0].text, /queue/);
  });

  test('after waits for its dependencies; one that failed ends the task failed, never run', async (t) => {
    const store = makeStore(t);
    const { client } = await store.connect();
    const a = await call(client, 'start_managed_task', { taskKey: 'first', command: gated(store.dir), waitMs: 0 });
    const ia = a.structuredContent.taskId;
    const b = await call(client, 'start_managed_task', { taskKey: 'k5', command: 'echo after', after: ['first'], waitMs: 0 });
    assert.equal(b.isError, undefined, JSON.stringify(b.content));
    const ib = b.structuredContent.taskId;
    await until(client, ib, (x) => x.state === 'queued', 'was queued');
    const wb = await read(client, ib, 0);
    assert.equal(wb.state, 'queued');
    assert.match(wb.reason, new RegExp(`waiting for task ${ia}`));
    writeFileSync(join(store.dir, 'gate'), '');
    const rb = await read(client, ib);
    assert.equal(rb.state, 'completed');
    assert.deepEqual(rb.tail, ['after']);
    const f = await call(client, 'start_managed_task', { taskKey: 'k6', command: 'exit 4', waitMs: 20000 });
    assert.equal(f.structuredContent.state, 'failed');
    const ran = join(store.dir, 'ran');
    const d = await call(client, 'start_managed_task', { taskKey: 'k7', command: `touch '${ran}'`, after: [f.structuredContent.taskId], waitMs: 20000 });
    assert.equal(d.structuredContent.state, 'failed');
    const rd = await read(client, d.structuredContent.taskId, 0);
    assert.match(rd.reason, new RegExp(`not run.*${f.structuredContent.taskId}`));
    assert.ok(!existsSync(ran), 'a task ran after a failed dependency');
    const u = await call(client, 'start_managed_task', { taskKey: 'k8', command: 'true', after: ['no-such-task'] });
    assert.equal(u.isError, true);
    assert.match(u.content[0].text, /no-such-task/);
  });

  test('delayMs holds the start', async (t) => {
    const store = makeStore(t);
    const { client } = await store.connect();
    const t0 = Date.now();
    const s = await call(client, 'start_managed_task', { taskKey: 'k9', command: 'echo late', delayMs: 800, waitMs: 0 });
    assert.equal(s.isError, undefined, JSON.stringify(s.content));
    // Queued when the answer left, unless a slow machine took the 800 ms
    // to answer: the record's times say whether the delay held.
    assert.ok(['queued', 'running', 'completed'].includes(s.structuredContent.state), s.structuredContent.state);
    const r = await read(client, s.structuredContent.taskId);
    assert.equal(r.state, 'completed');
    assert.ok(Date.now() - t0 >= 800, 'it started before its delay');
    const rec = JSON.parse(readFileSync(join(store.dir, 'tasks', s.structuredContent.taskId, 'record.json'), 'utf8'));
    assert.ok(Date.parse(rec.notBefore) >= t0 + 800, `not before ${rec.notBefore}, asked at ${new Date(t0).toISOString()}`);
    assert.ok(Date.parse(rec.started) >= Date.parse(rec.notBefore), `started ${rec.started}, not before ${rec.notBefore}`);
    const bad = await call(client, 'start_managed_task', { taskKey: 'k10', command: 'true', delayMs: -1 });
    assert.equal(bad.isError, true);
  });

  test('control_managed_task pauses, resumes and signals; bad requests are tool errors', async (t) => {
    const store = makeStore(t);
    const { client } = await store.connect();
    const ready = join(store.dir, 'ready');
    const got = join(store.dir, 'got');
    const s = await call(client, 'start_managed_task', {
      taskKey: 'ctl', command: `trap "echo usr1 > '${got}'; exit 0" USR1; touch '${ready}'; while :; do sleep 0.05; done`, waitMs: 0,
    });
    const id = s.structuredContent.taskId;
    for (let i = 0; i < 2400 && !existsSync(ready); i++) await new Promise((r) => setTimeout(r, 50));
    const p = await call(client, 'control_managed_task', { taskKey: 'ctl', action: 'pause' });
    assert.equal(p.isError, undefined, JSON.stringify(p.content));
    assert.equal(p.structuredContent.state, 'paused');
    assert.equal(p.structuredContent.action, 'pause');
    assert.equal((await listed(client, id)).state, 'paused');
    const r = await call(client, 'control_managed_task', { taskId: id, action: 'resume' });
    assert.equal(r.structuredContent.state, 'running');
    const again = await call(client, 'control_managed_task', { taskId: id, action: 'resume' });
    assert.equal(again.isError, true);
    assert.match(again.content[0].text, /not paused/);
    const nosig = await call(client, 'control_managed_task', { taskId: id, action: 'signal' });
    assert.equal(nosig.isError, true);
    const badsig = await call(client, 'control_managed_task', { taskId: id, action: 'signal', signal: 'NOPE' });
    assert.equal(badsig.isError, true);
    assert.match(badsig.content[0].text, /not a signal/);
    const sig = await call(client, 'control_managed_task', { taskId: id, action: 'signal', signal: 'USR1' });
    assert.equal(sig.isError, undefined, JSON.stringify(sig.content));
    assert.equal((await read(client, id)).state, 'completed');
    assert.equal(readFileSync(got, 'utf8'), 'usr1\n');
    const ended = await call(client, 'control_managed_task', { taskId: id, action: 'pause' });
    assert.equal(ended.isError, true);
    assert.match(ended.content[0].text, /ended/);
    const none = await call(client, 'control_managed_task', { taskKey: 'nope', action: 'pause' });
    assert.equal(none.isError, true);
  });
}
