// start_managed_task's stderr: the merged stream by default (both streams in
// the order written, as `cmd > file 2>&1`), "split" on request, anything
// else refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { makeStore, call } from './helpers.mjs';

test('stderr is merged in order by default, split on request, and checked', async (t) => {
  const store = makeStore(t);
  const { client } = await store.connect();
  const command = 'echo a; echo oops > /dev/stderr; echo b';
  const files = (id) => join(store.dir, 'tasks', id);
  const merged = await call(client, 'start_managed_task', { taskKey: 'm', command, waitMs: 20000 });
  assert.equal(merged.structuredContent.state, 'completed', JSON.stringify(merged.content));
  const m = merged.structuredContent.taskId;
  assert.equal(readFileSync(join(files(m), 'transcript'), 'utf8'), 'a\noops\nb\n');
  assert.equal(JSON.parse(readFileSync(join(files(m), 'record.json'), 'utf8')).transcript.stderr, 'merged');
  assert.ok(!existsSync(join(files(m), 'stderr-lines')));
  const split = await call(client, 'start_managed_task', { taskKey: 's', command, stderr: 'split', waitMs: 20000 });
  assert.equal(split.structuredContent.state, 'completed');
  const s = split.structuredContent.taskId;
  assert.equal(JSON.parse(readFileSync(join(files(s), 'record.json'), 'utf8')).transcript.stderr, 'split');
  assert.ok(existsSync(join(files(s), 'stderr-lines')));
  const bad = await call(client, 'start_managed_task', { taskKey: 'b', command, stderr: 'both' });
  assert.equal(bad.isError, true);
  assert.match(bad.content[0].text, /stderr must be one of merged, split \(got the string "both"\)/);
});
