// The managed-task tools through the official SDK client (1.32.2,
// revisions up to 2025-11-25): the behaviours both clients share
// (../mcp-shared/tools.behaviours.mjs), then what is this revision's own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EmptyResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { makeStore, call } from './helpers.mjs';
import { toolBehaviours } from '../mcp-shared/tools.behaviours.mjs';

toolBehaviours(test, { makeStore, call });

test('connect and list the tools', async (t) => {
  const store = makeStore(t);
  const { client } = await store.connect();
  const { tools } = await client.listTools();
  const names = tools.map((x) => x.name).sort();
  assert.deepEqual(names, ['cancel_managed_task', 'control_managed_task', 'list_managed_tasks', 'read_managed_task', 'start_managed_task']);
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

test('tools/list fits in 8 KiB: what every turn of a model pays for the five tools', async (t) => {
  const store = makeStore(t);
  const { client, transport } = await store.connect();
  const sizes = [];
  const onmessage = transport.onmessage;
  transport.onmessage = (m, extra) => {
    if (m?.result?.tools) sizes.push(Buffer.byteLength(JSON.stringify(m)));
    onmessage?.(m, extra);
  };
  const { tools } = await client.listTools();
  assert.equal(tools.length, 5);
  assert.equal(sizes.length, 1);
  assert.ok(sizes[0] <= 8192, `tools/list is ${sizes[0]} bytes`);
  // Still a description of what each tool does and when, and every
  // argument described.
  for (const tool of tools) {
    assert.ok(tool.description.length >= 100, `${tool.name}: ${tool.description}`);
    for (const [name, p] of Object.entries(tool.inputSchema.properties))
      assert.ok(p.description?.length > 10, `${tool.name}.${name} has a description`);
  }
});

test('logging/setLevel is declared and checked (2025-11-25)', async (t) => {
  const store = makeStore(t);
  const { client } = await store.connect();
  assert.ok(client.getServerCapabilities().logging);
  assert.deepEqual(await client.setLoggingLevel('info'), {});
  await assert.rejects(client.request({ method: 'logging/setLevel', params: { level: 'loud' } }, EmptyResultSchema), (e) => e.code === -32602);
});
