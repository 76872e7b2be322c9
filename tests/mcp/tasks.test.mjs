// The MCP Tasks utility (revision 2025-11-25) through the SDK's experimental
// tasks client, and durable task ids across a server restart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { overBoth, call } from './helpers.mjs';

const both = (name, fn) => overBoth(test, name, fn);

const RELATED = 'io.modelcontextprotocol/related-task';

both('task-augmented start: callToolStream, getTask, listTasks, cancelTask', async (t, makeStore) => {
  const store = makeStore(t);
  const { client } = await store.connect();
  const tasks = client.experimental.tasks;
  const tool = (await client.listTools()).tools.find((x) => x.name === 'start_managed_task');
  assert.equal(tool.execution.taskSupport, 'optional');

  const seen = [];
  let result;
  for await (const m of tasks.callToolStream({ name: 'start_managed_task', arguments: { taskKey: 'aug', command: 'sleep 0.5; echo built' } }, undefined, { task: {} })) {
    seen.push(m.type);
    if (m.type === 'taskCreated') assert.match(m.task.taskId, /^[a-z0-9]+-[a-z0-9]+$/);
    if (m.type === 'result') result = m.result;
    if (m.type === 'error') throw m.error;
  }
  assert.equal(seen[0], 'taskCreated');
  assert.equal(seen.at(-1), 'result');
  assert.equal(result.structuredContent.state, 'completed');
  assert.deepEqual(result.structuredContent.tail, ['built']);
  const id = result.structuredContent.taskId;
  assert.equal(result._meta[RELATED].taskId, id);

  const got = await tasks.getTask(id);
  assert.equal(got.status, 'completed');
  assert.equal(got.taskId, id);
  assert.equal(got.ttl, null);

  // A long task: created, listed, cancelled (reads cancelled in the reply).
  let longId;
  for await (const m of tasks.callToolStream({ name: 'start_managed_task', arguments: { taskKey: 'aug-long', command: ['sleep', 'infinity'] } }, undefined, { task: {} })) {
    if (m.type === 'taskCreated') { longId = m.task.taskId; break; }
  }
  assert.ok(longId);
  const list = await tasks.listTasks();
  assert.deepEqual(list.tasks.map((x) => x.taskId).sort(), [id, longId].sort());
  assert.equal(list.tasks.find((x) => x.taskId === longId).status, 'working');
  const cancelled = await tasks.cancelTask(longId);
  assert.equal(cancelled.status, 'cancelled');
  assert.equal((await tasks.getTask(longId)).status, 'cancelled');
  // Terminal tasks cannot be cancelled; unknown ids are invalid params.
  await assert.rejects(tasks.cancelTask(id), (e) => e.code === -32602);
  await assert.rejects(tasks.getTask('zzzzzzzz-zzzzzz'), (e) => e.code === -32602);
  await assert.rejects(tasks.getTask('../etc'), (e) => e.code === -32602);
  // tasks/result of a cancelled task: exactly the plain call's answer
  // (a start's answer is never isError for a task that ran).
  const payload = await tasks.getTaskResult(longId, CallToolResultSchema);
  assert.equal(payload.isError, undefined);
  assert.equal(payload.structuredContent.state, 'cancelled');
  assert.equal(payload._meta[RELATED].taskId, longId);
});

both('task-augmented: a failed task\'s result is the plain call\'s; an ended key begins working; bad arguments are the plain isError', async (t, makeStore) => {
  const store = makeStore(t);
  const { client } = await store.connect();
  const tasks = client.experimental.tasks;
  const seen = [];
  let result;
  for await (const m of tasks.callToolStream({ name: 'start_managed_task', arguments: { taskKey: 'bad-build', command: 'echo "error: it broke"; exit 4' } }, undefined, { task: {} })) {
    seen.push(m.type === 'taskStatus' ? m.task.status : m.type);
    if (m.type === 'result') result = m.result;
    if (m.type === 'error') throw m.error;
  }
  assert.equal(seen.at(-1), 'result', `the SDK fetches the result: ${seen}`);
  assert.equal(result.isError, undefined);
  assert.equal(result.structuredContent.state, 'failed');
  assert.equal(result.structuredContent.exitCode, 4);
  const plain = await call(client, 'start_managed_task', { taskKey: 'bad-build', command: 'echo "error: it broke"; exit 4' });
  assert.equal(plain.isError, undefined);
  assert.deepEqual(plain.structuredContent.important, result.structuredContent.important);
  // The key names an ended task: the MCP task still begins working.
  for await (const m of tasks.callToolStream({ name: 'start_managed_task', arguments: { taskKey: 'bad-build', command: 'echo "error: it broke"; exit 4' } }, undefined, { task: {} })) {
    if (m.type === 'taskCreated') { assert.equal(m.task.status, 'working'); break; }
  }
  // Bad arguments: the same isError result as the plain call, no task.
  const raw = await client.request({ method: 'tools/call', params: { name: 'start_managed_task', arguments: { taskKey: 7, command: 'true' }, task: {} } }, CallToolResultSchema);
  assert.equal(raw.isError, true);
  assert.match(raw.content[0].text, /taskKey must be a string/);
  const same = await call(client, 'start_managed_task', { taskKey: 7, command: 'true' });
  assert.deepEqual(same.content, raw.content);
  // tasks/list refuses a cursor that names no task.
  await assert.rejects(tasks.listTasks('zzzzzzzz-zzzzzz'), (e) => e.code === -32602 && /names no task/.test(e.message));
});

both('tasks/list paginates', async (t, makeStore) => {
  const store = makeStore(t);
  const { client } = await store.connect();
  const ids = [];
  for (let i = 0; i < 55; i++) {
    const r = await call(client, 'start_managed_task', { taskKey: `p${i}`, command: 'true', waitMs: 0 });
    ids.push(r.structuredContent.taskId);
  }
  const p1 = await client.experimental.tasks.listTasks();
  assert.equal(p1.tasks.length, 50);
  assert.ok(p1.nextCursor);
  const p2 = await client.experimental.tasks.listTasks(p1.nextCursor);
  assert.equal(p2.tasks.length, 5);
  assert.equal(p2.nextCursor, undefined);
  const all = [...p1.tasks, ...p2.tasks].map((x) => x.taskId);
  assert.deepEqual(all, [...ids].reverse());
});

both('a task id from before a server restart works after it', async (t, makeStore) => {
  const store = makeStore(t);
  const first = await store.connect();
  let id;
  for await (const m of first.client.experimental.tasks.callToolStream({ name: 'start_managed_task', arguments: { taskKey: 'survivor', command: 'sleep 1.5; echo survived' } }, undefined, { task: {} })) {
    if (m.type === 'taskCreated') { id = m.task.taskId; break; }
  }
  await first.client.close(); // the server exits; the task goes on
  const second = await store.connect();
  const tasks = second.client.experimental.tasks;
  const payload = await tasks.getTaskResult(id, CallToolResultSchema); // waits until terminal
  assert.equal(payload.structuredContent.state, 'completed');
  assert.deepEqual(payload.structuredContent.tail, ['survived']);
  assert.equal(payload._meta[RELATED].taskId, id);
  assert.equal((await tasks.getTask(id)).status, 'completed');
  const r = await call(second.client, 'read_managed_task', { taskKey: 'survivor' });
  assert.equal(r.structuredContent.taskId, id);
});

both('a task-augmented start keeps its maxBytes and tailLines in tasks/result, from any server', async (t, makeStore) => {
  const store = makeStore(t);
  const { client } = await store.connect();
  const size = (r) => Buffer.byteLength(JSON.stringify(r));
  const command = 'seq 1 300 | sed "s/^/progress line of some length /"; echo "error: it broke at the end"; exit 2';
  for (const maxBytes of [1024, 2048]) {
    let result;
    for await (const m of client.experimental.tasks.callToolStream({ name: 'start_managed_task', arguments: { taskKey: `b${maxBytes}`, command, maxBytes } }, undefined, { task: {} })) {
      if (m.type === 'result') result = m.result;
      if (m.type === 'error') throw m.error;
    }
    assert.ok(size(result) <= maxBytes, `maxBytes ${maxBytes}: tasks/result answered ${size(result)} bytes`);
    assert.equal(result.structuredContent.state, 'failed');
    assert.ok(result.structuredContent.important.first.some((l) => l.text === 'error: it broke at the end'), JSON.stringify(result.structuredContent));
    // Another server on the store answers tasks/result within the same bound.
    const other = await store.connect();
    const again = await other.client.experimental.tasks.getTaskResult(result.structuredContent.taskId, CallToolResultSchema);
    assert.ok(size(again) <= maxBytes, `another server: ${size(again)} bytes`);
  }
  let result;
  for await (const m of client.experimental.tasks.callToolStream({ name: 'start_managed_task', arguments: { taskKey: 'two', command: 'seq 1 9', tailLines: 2 } }, undefined, { task: {} })) {
    if (m.type === 'result') result = m.result;
  }
  assert.deepEqual(result.structuredContent.tail, ['8', '9']);
});

both('callToolStream of a task stopped by cancel_managed_task ends with a result: isError, the reason', async (t, makeStore) => {
  const store = makeStore(t);
  const { client } = await store.connect();
  const seen = [];
  let result;
  let stopped = false;
  for await (const m of client.experimental.tasks.callToolStream({ name: 'start_managed_task', arguments: { taskKey: 'stopme', command: ['sleep', 'infinity'] } }, undefined, { task: {} })) {
    seen.push(m.type === 'taskStatus' ? m.task.status : m.type);
    if (m.type === 'taskCreated' && !stopped) {
      stopped = true;
      const c = await call(client, 'cancel_managed_task', { taskKey: 'stopme' });
      assert.equal(c.structuredContent.state, 'cancelled');
    }
    if (m.type === 'result') result = m.result;
    if (m.type === 'error') throw m.error;
  }
  assert.equal(seen.at(-1), 'result', `${seen}`);
  assert.equal(result.isError, true);
  assert.equal(result.structuredContent.state, 'cancelled');
  assert.match(result.structuredContent.reason, /stop requested by/);
  assert.match(result.content[0].text, /stop requested by/);
  // tasks/cancel is the requester's own stop: the task reads cancelled.
  let id;
  for await (const m of client.experimental.tasks.callToolStream({ name: 'start_managed_task', arguments: { taskKey: 'mine', command: ['sleep', 'infinity'] } }, undefined, { task: {} })) {
    if (m.type === 'taskCreated') { id = m.task.taskId; break; }
  }
  assert.equal((await client.experimental.tasks.cancelTask(id)).status, 'cancelled');
  assert.equal((await client.experimental.tasks.getTask(id)).status, 'cancelled');
});
