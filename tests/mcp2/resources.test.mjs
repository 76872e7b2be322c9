// Resources and subscriptions/listen through the v2 client (2026-07-28).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { overBoth, call } from './helpers.mjs';

const both = (name, fn) => overBoth(test, name, fn);

both('resources: templates, list, read; listen for a transcript', async (t, makeStore) => {
  const store = makeStore(t);
  const { client, raw } = await store.connect();
  const { resourceTemplates } = await client.listResourceTemplates();
  assert.deepEqual(resourceTemplates.map((x) => x.uriTemplate).sort(),
    ['taskfs://tasks/{taskId}/record', 'taskfs://tasks/{taskId}/transcript']);
  // The ticks begin once the test listens (the gate), not 1 s after the
  // start: a listen after the task's end hears nothing.
  const go = join(store.dir, 'go');
  const s = await call(client, 'start_managed_task', {
    taskKey: 'ticker', waitMs: 0,
    command: `echo first; until [ -e '${go}' ]; do sleep 0.05; done; for i in 1 2 3 4 5; do echo tick $i; sleep 0.2; done`,
  });
  const id = s.structuredContent.taskId;
  const uri = `taskfs://tasks/${id}/transcript`;
  const updates = [];
  let wake;
  client.setNotificationHandler('notifications/resources/updated', (n) => { updates.push(n.params.uri); wake?.(); });
  const sub = await client.listen({ resourceSubscriptions: [uri, 'file:///etc/passwd'] });
  assert.deepEqual(sub.honoredFilter.resourceSubscriptions, [uri], 'only taskfs resources are honoured');
  writeFileSync(go, '');
  const deadline = Date.now() + 120000; // a guard against a hang
  while (!updates.length && Date.now() < deadline) await new Promise((r) => { wake = r; setTimeout(r, 500); });
  assert.equal(updates[0], uri);
  await sub.close();

  const list = await raw('resources/list');
  assert.equal(list.result.resultType, 'complete');
  assert.equal(list.result.cacheScope, 'private');
  assert.equal(list.result.ttlMs, 0);
  assert.ok(list.result.resources.some((r) => r.uri === uri));
  const rec = await client.readResource({ uri: `taskfs://tasks/${id}/record` });
  assert.equal(JSON.parse(rec.contents[0].text).id, id);
  await assert.rejects(client.readResource({ uri: 'taskfs://tasks/zzzzzzzz-zzzzzz/record' }), (e) => e.code === -32602);
  await assert.rejects(client.readResource({ uri: 'file:///etc/passwd' }), (e) => e.code === -32602);
});

both('removed and legacy-only methods, and a bad envelope, are refused with reasons', async (t, makeStore) => {
  const store = makeStore(t);
  const { client, raw } = await store.connect();
  await assert.rejects(client.ping(), (e) => e.code === 'METHOD_NOT_SUPPORTED_BY_PROTOCOL_VERSION', 'refused by the client itself');
  for (const method of ['ping', 'logging/setLevel', 'tasks/result', 'tasks/list', 'resources/subscribe', 'initialize']) {
    const r = await raw(method, method === 'logging/setLevel' ? { level: 'info' } : {});
    assert.equal(r.error?.code, -32601, method);
    assert.match(r.error.message, /is not part of 2026-07-28/);
  }
  const bad = await raw('tools/list', {}, { 'io.modelcontextprotocol/clientCapabilities': 'none' });
  assert.equal(bad.error.code, -32602);
  assert.equal(bad.error.data.envelope.key, 'io.modelcontextprotocol/clientCapabilities');
  const old = await raw('tools/list', {}, { 'io.modelcontextprotocol/protocolVersion': '2025-11-25' });
  assert.equal(old.error.code, -32022);
  assert.deepEqual(old.error.data.supported, ['2026-07-28']);
  const { tools } = await client.listTools();
  assert.equal(tools.length, 5, 'still serving');
});
