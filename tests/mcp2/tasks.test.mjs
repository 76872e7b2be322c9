// The 2026-07-28 tasks extension (io.modelcontextprotocol/tasks) through
// the v2 client: a start that launches a task is answered with it
// (resultType "task", which callTool() refuses by design, so the raw seam
// takes it), tasks/get inlines the plain call's result, tasks/cancel
// acknowledges, listen taskIds streams notifications/tasks, ext-tasks
// settles a call, and any server on the store answers for the task.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTaskSessionFromClient, resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client';
import { overBoth, call, Any, PROTOCOL, TASKS, sleep } from './helpers.mjs';

const both = (name, fn) => overBoth(test, name, fn);

async function settle(client, taskId) {
  for (;;) {
    const t = await client.request({ method: 'tasks/get', params: { taskId } }, Any);
    if (t.status !== 'working') return t;
    await sleep(t.pollIntervalMs ?? 200);
  }
}

both('a task per launch: created working, completed with the plain call\'s result', async (t, makeStore) => {
  const store = makeStore(t);
  const { client, raw } = await store.connect({ tasks: true });
  await assert.rejects(call(client, 'start_managed_task', { taskKey: 'x', command: 'true' }), (e) => e.code === 'UNSUPPORTED_RESULT_TYPE');
  const created = (await raw('tools/call', { name: 'start_managed_task', arguments: { taskKey: 'build', command: 'sleep 0.5; echo "error: it broke"; exit 4' } })).result;
  assert.equal(created.resultType, 'task');
  assert.equal(created.status, 'working');
  assert.equal(created.ttlMs, null);
  assert.ok(created.pollIntervalMs > 0);
  const done = await settle(client, created.taskId);
  assert.equal(done.status, 'completed', 'a failed build is a completed call');
  assert.equal(done.result.resultType, 'complete');
  assert.equal(done.result.isError, undefined);
  assert.equal(done.result.structuredContent.state, 'failed');
  assert.equal(done.result.structuredContent.exitCode, 4);
  // An ended key launches nothing: the plain answer, at once.
  const again = (await raw('tools/call', { name: 'start_managed_task', arguments: { taskKey: 'build', command: 'sleep 0.5; echo "error: it broke"; exit 4' } })).result;
  assert.equal(again.resultType, 'complete');
  assert.equal(again.structuredContent.existing, true);
  // Bad arguments: the same isError result as without the extension.
  const bad = (await raw('tools/call', { name: 'start_managed_task', arguments: { taskKey: 7, command: 'true' } })).result;
  assert.equal(bad.isError, true);
  assert.match(bad.content[0].text, /taskKey must be a string/);
  // Another server process (2026-07-28 is stateless) answers for the task.
  const other = await store.connect({ tasks: true });
  const seen = await other.client.request({ method: 'tasks/get', params: { taskId: created.taskId } }, Any);
  assert.equal(seen.result.structuredContent.taskId, created.taskId);
  await assert.rejects(other.client.request({ method: 'tasks/get', params: { taskId: 'zzzzzzzz-zzzzzz' } }, Any), (e) => e.code === -32602);
  // Without the extension declared: -32021.
  const plain = await store.connect();
  await assert.rejects(plain.client.request({ method: 'tasks/get', params: { taskId: created.taskId } }, Any), (e) => e.code === -32021);
});

both('tasks/cancel acknowledges; listen taskIds streams the end', async (t, makeStore) => {
  const store = makeStore(t);
  const { client, raw } = await store.connect({ tasks: true });
  const created = (await raw('tools/call', { name: 'start_managed_task', arguments: { taskKey: 'long', command: ['sleep', '60'] } })).result;
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
