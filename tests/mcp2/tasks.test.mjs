// The 2026-07-28 tasks extension (io.modelcontextprotocol/tasks) through
// the v2 client: a start answers with its result even with the extension
// declared (callTool() refuses a "task" result), and its taskId is the MCP
// task: tasks/get inlines the plain call's result, tasks/cancel
// acknowledges, listen taskIds streams notifications/tasks, ext-tasks
// settles a call, and any server on the store answers for the task.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTaskSessionFromClient, resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { overBoth, call, Any, PROTOCOL, TASKS, sleep } from './helpers.mjs';

const both = (name, fn) => overBoth(test, name, fn);

async function settle(client, taskId) {
  for (;;) {
    const t = await client.request({ method: 'tasks/get', params: { taskId } }, Any);
    if (t.status !== 'working') return t;
    await sleep(t.pollIntervalMs ?? 200);
  }
}

both('the v2 client with the extension declared: callTool answers, tasks/get follows the task', async (t, makeStore) => {
  const store = makeStore(t);
  const { client, raw } = await store.connect({ tasks: true });
  // callTool takes the answer (the v2 client refuses a "task" result): the
  // plain call's, whose taskId is the MCP task id.
  // The build fails once the test has seen it working (the gate), not
  // after 0.5 s, which a slow machine could spend before the answer.
  const go = join(store.dir, 'go');
  const command = `until [ -e '${go}' ]; do sleep 0.05; done; echo "error: it broke"; exit 4`;
  const started = await call(client, 'start_managed_task', { taskKey: 'build', command, waitMs: 0 });
  assert.equal(started.isError, undefined);
  assert.equal(started.structuredContent.state, 'running');
  const taskId = started.structuredContent.taskId;
  const working = await client.request({ method: 'tasks/get', params: { taskId } }, Any);
  assert.equal(working.status, 'working');
  writeFileSync(go, '');
  const done = await settle(client, taskId);
  assert.equal(done.status, 'completed', 'a failed build is a completed call');
  assert.equal(done.result.resultType, 'complete');
  assert.equal(done.result.isError, undefined);
  assert.equal(done.result.structuredContent.state, 'failed');
  assert.equal(done.result.structuredContent.exitCode, 4);
  // A start that ends within its wait answers with its end, raw or not.
  const quick = (await raw('tools/call', { name: 'start_managed_task', arguments: { taskKey: 'quick', command: 'echo fine', waitMs: 20000 } })).result;
  assert.equal(quick.resultType, 'complete');
  assert.equal(quick.structuredContent.state, 'completed');
  // An ended key launches nothing: the plain answer, at once.
  const again = await call(client, 'start_managed_task', { taskKey: 'build', command });
  assert.equal(again.structuredContent.existing, true);
  // Bad arguments: the same isError result as without the extension.
  const bad = await call(client, 'start_managed_task', { taskKey: 7, command: 'true' });
  assert.equal(bad.isError, true);
  assert.match(bad.content[0].text, /taskKey must be a string/);
  // Another server process (2026-07-28 is stateless) answers for the task.
  const other = await store.connect({ tasks: true });
  const seen = await other.client.request({ method: 'tasks/get', params: { taskId } }, Any);
  assert.equal(seen.result.structuredContent.taskId, taskId);
  await assert.rejects(other.client.request({ method: 'tasks/get', params: { taskId: 'zzzzzzzz-zzzzzz' } }, Any), (e) => e.code === -32602);
  // Without the extension declared: -32021.
  const plain = await store.connect();
  await assert.rejects(plain.client.request({ method: 'tasks/get', params: { taskId } }, Any), (e) => e.code === -32021);
});

both('a task stopped by cancel_managed_task completes its call with an isError result naming the stop', async (t, makeStore) => {
  const store = makeStore(t);
  const { client } = await store.connect({ tasks: true });
  const started = await call(client, 'start_managed_task', { taskKey: 'long', command: ['sleep', 'infinity'], waitMs: 0 });
  const taskId = started.structuredContent.taskId;
  await call(client, 'cancel_managed_task', { taskKey: 'long' });
  const done = await settle(client, taskId);
  assert.equal(done.status, 'completed');
  assert.equal(done.result.isError, true);
  assert.equal(done.result.structuredContent.state, 'cancelled');
  assert.match(done.result.structuredContent.reason, /stop requested by/);
});

both('tasks/cancel acknowledges; listen taskIds streams the end', async (t, makeStore) => {
  const store = makeStore(t);
  const { client, raw } = await store.connect({ tasks: true });
  const created = (await call(client, 'start_managed_task', { taskKey: 'long', command: ['sleep', 'infinity'], waitMs: 0 })).structuredContent;
  const told = [];
  let wake;
  client.setNotificationHandler('notifications/tasks', { params: Any }, (params) => { told.push(params); wake?.(); });
  // The client's listen() knows no taskIds (an extension's filter): raw.
  const listen = raw.start('subscriptions/listen', { notifications: { taskIds: [created.taskId, 'zzzzzzzz-zzzzzz'] } });
  const ack = await client.request({ method: 'tasks/cancel', params: { taskId: created.taskId } }, Any);
  assert.equal(Object.keys(ack).filter((k) => k !== '_meta' && k !== 'resultType').length, 0, 'an empty acknowledgement');
  const deadline = Date.now() + 120000; // a guard against a hang
  while (!told.some((x) => x.status === 'cancelled') && Date.now() < deadline) await new Promise((r) => { wake = r; setTimeout(r, 500); });
  const end = told.find((x) => x.status === 'cancelled');
  assert.equal(end?.taskId, created.taskId, JSON.stringify(told));
  assert.equal(end.ttlMs, null);
  await raw.notify('notifications/cancelled', { requestId: listen.id });
  assert.equal((await settle(client, created.taskId)).status, 'cancelled');
  const upd = await client.request({ method: 'tasks/update', params: { taskId: created.taskId, inputResponses: {} } }, Any);
  assert.ok(upd);
});

both('ext-tasks settles a start through the raw seam', async (t, makeStore) => {
  const store = makeStore(t);
  const { client, raw } = await store.connect({ tasks: true });
  const clientInfo = { name: 'taskfs-tests-v2', version: '1.0.0' };
  const clientCapabilities = { extensions: { [TASKS]: {} } };
  const session = createTaskSessionFromClient(client, {
    endpointId: 'taskfs',
    rawDispatch: async (request) => ({ ...(await raw(request.method, request.params)), id: request.id }),
    v2RequestFraming: { protocolVersion: PROTOCOL, clientInfo, clientCapabilities },
  });
  try {
    const execution = await session.callTool('start_managed_task', { taskKey: 'ext', command: 'sleep 0.3; echo settled' });
    const { outcome } = await execution.settle();
    const result = resultFromTaskOutcome(outcome);
    assert.equal(result.structuredContent.state, 'completed');
    assert.deepEqual(result.structuredContent.tail, ['settled']);
  } finally {
    await session.close();
  }
});

both('tasks/get inlines the result within the start\'s maxBytes', async (t, makeStore) => {
  const store = makeStore(t);
  const { client } = await store.connect({ tasks: true });
  const size = (r) => Buffer.byteLength(JSON.stringify(r));
  const command = 'sleep 0.3; seq 1 300 | sed "s/^/progress line of some length /"; echo "error: it broke at the end"; exit 2';
  for (const maxBytes of [1024, 2048]) {
    const created = (await call(client, 'start_managed_task', { taskKey: `b${maxBytes}`, command, maxBytes, waitMs: 0 })).structuredContent;
    const done = await settle(client, created.taskId);
    assert.ok(size(done.result) <= maxBytes, `maxBytes ${maxBytes}: the inline result is ${size(done.result)} bytes`);
    assert.equal(done.result.structuredContent.state, 'failed');
    assert.ok(done.result.structuredContent.important.first.some((l) => l.text === 'error: it broke at the end'));
  }
});
