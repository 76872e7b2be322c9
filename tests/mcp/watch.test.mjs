// Waiting on the server's watch, with inotify and without it
// (TASKFS_NO_INOTIFY=1: the watch's tick alone): a long-poll wakes on the
// end and, with untilPattern, on output; subscriptions are told of
// transcript growth and of record changes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeStore, call } from './helpers.mjs';
import { readIsParked } from '../mcp-shared/tools.behaviours.mjs';

for (const [mode, env] of [['inotify', {}], ['no inotify', { TASKFS_NO_INOTIFY: '1' }]]) {
  test(`long-polls wake on output and on the end (${mode})`, async (t) => {
    const store = makeStore(t);
    const { client } = await store.connect({ env });
    // Each line comes once the read that waits for it has begun (gates
    // the test makes, never pauses): untilPattern counts only lines
    // written after the read began.
    const [ready, bye] = [join(store.dir, 'ready'), join(store.dir, 'bye')];
    await call(client, 'start_managed_task', {
      taskKey: 'w', waitMs: 0,
      command: `echo starting; until [ -e '${ready}' ]; do sleep 0.05; done; echo "ready now"; ` +
        `until [ -e '${bye}' ]; do sleep 0.05; done; echo bye`,
    });
    const reading = call(client, 'read_managed_task', { taskKey: 'w', untilPattern: '^ready', waitMs: 40000 });
    await readIsParked(call, client);
    writeFileSync(ready, '');
    const m = await reading;
    assert.equal(m.structuredContent.timedOut, false);
    assert.equal(m.structuredContent.match.text, 'ready now');
    const ending = call(client, 'read_managed_task', { taskKey: 'w', waitMs: 40000 });
    await readIsParked(call, client);
    writeFileSync(bye, '');
    const e = await ending;
    assert.equal(e.structuredContent.state, 'completed');
    assert.equal(e.structuredContent.timedOut, false);
    assert.deepEqual(e.structuredContent.tail.slice(-1), ['bye']);
  });

  test(`subscriptions hear of output and of record changes (${mode})`, async (t) => {
    const store = makeStore(t);
    const { client } = await store.connect({ env });
    // It writes once the test has subscribed (the gate), not after 1 s: a
    // subscription made after its end would hear of nothing.
    const go = join(store.dir, 'go');
    const s = await call(client, 'start_managed_task', {
      taskKey: 'sub', command: `until [ -e '${go}' ]; do sleep 0.05; done; echo one; sleep 0.2; echo two`, waitMs: 0,
    });
    const id = s.structuredContent.taskId;
    const seen = new Set();
    let wake;
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { seen.add(n.params.uri); wake?.(); });
    const record = `taskfs://tasks/${id}/record`, transcript = `taskfs://tasks/${id}/transcript`;
    await client.subscribeResource({ uri: transcript });
    await client.subscribeResource({ uri: record });
    writeFileSync(go, '');
    const r = await call(client, 'read_managed_task', { taskId: id, waitMs: 40000 });
    assert.equal(r.structuredContent.state, 'completed');
    // The end is a record change; the last notification may be on its way.
    const deadline = Date.now() + 120000; // a guard against a hang
    while (!(seen.has(record) && seen.has(transcript)) && Date.now() < deadline)
      await new Promise((res) => { wake = res; setTimeout(res, 500); });
    assert.ok(seen.has(transcript), 'transcript growth was notified');
    assert.ok(seen.has(record), 'a record change was notified');
  });
}
