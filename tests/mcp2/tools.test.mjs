// The managed-task tools through @modelcontextprotocol/client 2.4.0 pinned
// to 2026-07-28: the behaviours both clients share
// (../mcp-shared/tools.behaviours.mjs), then what is this revision's own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeStore, call, PROTOCOL, TASKS } from './helpers.mjs';
import { toolBehaviours } from '../mcp-shared/tools.behaviours.mjs';

toolBehaviours(test, { makeStore, call, probes: true });

test('discover, then the tools as 2026-07-28 lists them', async (t) => {
  const store = makeStore(t);
  const { client } = await store.connect();
  assert.equal(client.getProtocolEra(), 'modern');
  assert.equal(client.getNegotiatedProtocolVersion(), PROTOCOL);
  const d = client.getDiscoverResult();
  assert.deepEqual(d.supportedVersions, [PROTOCOL]);
  assert.ok(d.capabilities.extensions[TASKS]);
  assert.equal(d._meta['io.modelcontextprotocol/serverInfo'].name, 'taskfs');
  assert.match(d.instructions, /start_managed_task/);
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((x) => x.name).sort(), ['cancel_managed_task', 'control_managed_task', 'list_managed_tasks', 'read_managed_task', 'start_managed_task']);
  for (const tool of tools) {
    for (const [name, p] of Object.entries(tool.inputSchema.properties))
      assert.ok(p.description?.length > 10, `${tool.name}.${name} has a description`);
    assert.ok(!JSON.stringify(tool).includes('"type":["'), `${tool.name}: no type arrays`);
  }
});

test('tools/list fits in 8 KiB in 2026-07-28 too, with execution.taskSupport', async (t) => {
  const store = makeStore(t);
  const { raw } = await store.connect({ tasks: true });
  const m = await raw('tools/list');
  const size = Buffer.byteLength(JSON.stringify(m));
  assert.ok(size <= 8192, `tools/list is ${size} bytes`);
  assert.equal(m.result.tools.length, 5);
  for (const tool of m.result.tools)
    assert.equal(tool.execution?.taskSupport, tool.name === 'start_managed_task' ? 'optional' : 'forbidden', tool.name);
});

test('cwd: a root that is not a directory here is named, through input_required (MRTR)', async (t) => {
  const store = makeStore(t);
  const far = await store.connect({ roots: [{ uri: 'file:///no/such/dir', name: 'gone' }] });
  const b = await call(far.client, 'start_managed_task', { taskKey: 'far', command: 'pwd', waitMs: 20000 });
  assert.equal(b.structuredContent.cwdFrom, 'server');
  assert.match(b.structuredContent.cwdNote, /not an existing directory/);
  const none = await store.connect();
  const c = await call(none.client, 'start_managed_task', { taskKey: 'none', command: 'pwd', waitMs: 20000 });
  assert.equal(c.structuredContent.cwdFrom, 'server');
  assert.equal(c.structuredContent.cwdNote, undefined);
});
