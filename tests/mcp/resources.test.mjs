// Resources: templates, list, read (bounded transcript), and a subscription
// that receives notifications/resources/updated.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { overBoth, call } from './helpers.mjs';

const both = (name, fn) => overBoth(test, name, fn);

both('resources: templates, list, read, subscribe', async (t, makeStore) => {
  const store = makeStore(t);
  const { client } = await store.connect();
  const { resourceTemplates } = await client.listResourceTemplates();
  assert.deepEqual(resourceTemplates.map((x) => x.uriTemplate).sort(),
    ['taskfs://tasks/{taskId}/record', 'taskfs://tasks/{taskId}/transcript']);

  // The ticks begin once the test has subscribed (the gate), not 1 s
  // after the start: a subscription after the task's end hears nothing.
  const go = join(store.dir, 'go');
  const s = await call(client, 'start_managed_task', {
    taskKey: 'ticker', waitMs: 0,
    command: `echo first; until [ -e '${go}' ]; do sleep 0.05; done; for i in 1 2 3 4 5 6 7 8 9 10; do echo tick $i; sleep 0.2; done`,
  });
  const id = s.structuredContent.taskId;
  const uri = `taskfs://tasks/${id}/transcript`;
  const updates = [];
  let notify;
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { updates.push(n.params.uri); notify?.(); });
  await client.subscribeResource({ uri });
  writeFileSync(go, '');
  let timer;
  await new Promise((resolve, reject) => {
    notify = resolve;
    timer = setTimeout(() => reject(new Error('no notifications/resources/updated within 120 s')), 120000);
  });
  clearTimeout(timer);
  assert.equal(updates[0], uri);

  const list = await client.listResources();
  assert.ok(list.resources.some((r) => r.uri === uri));
  const rec = await client.readResource({ uri: `taskfs://tasks/${id}/record` });
  assert.equal(JSON.parse(rec.contents[0].text).id, id);
  const tr = await client.readResource({ uri });
  assert.match(tr.contents[0].text, /^first\n/);
  await assert.rejects(client.readResource({ uri: 'taskfs://tasks/zzzzzzzz-zzzzzz/record' }), (e) => e.code === -32002);
  await assert.rejects(client.readResource({ uri: 'file:///etc/passwd' }), (e) => e.code === -32602);
  // The rate limit: a burst of ticks (5 a second) gives at most 2
  // notifications a second for the resource.
  const t0 = Date.now();
  const before = updates.length;
  const r = await call(client, 'read_managed_task', { taskId: id, waitMs: 30000 });
  assert.equal(r.structuredContent.state, 'completed');
  const secs = (Date.now() - t0) / 1000;
  assert.ok(updates.length - before <= Math.ceil(secs * 2) + 2, `${updates.length - before} updates in ${secs} s`);
  assert.ok(updates.length >= 2);
  await client.unsubscribeResource({ uri });
});

both('the transcript resource is bounded to its last 64 KiB', async (t, makeStore) => {
  const store = makeStore(t);
  const { client } = await store.connect();
  const s = await call(client, 'start_managed_task', { taskKey: 'big', command: 'seq 1 50000', waitMs: 30000 });
  assert.equal(s.structuredContent.state, 'completed');
  const tr = await client.readResource({ uri: `taskfs://tasks/${s.structuredContent.taskId}/transcript` });
  const text = tr.contents[0].text;
  assert.ok(text.length <= 64 * 1024);
  assert.ok(text.endsWith('49999\n50000\n'));
  assert.match(text, /^\d+\n/, 'starts at a line boundary');
  assert.equal(tr.contents[0]._meta.truncated, true);
});
