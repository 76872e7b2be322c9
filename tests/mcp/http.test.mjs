// The managed-task tools over Streamable HTTP: `taskfs serve` driven by
// the official SDK client (1.32.2, revision 2025-11-25: a session per
// connection, Mcp-Session-Id, SSE for long-polls), the same behaviours as
// over stdio (../mcp-shared/tools.behaviours.mjs), then what HTTP adds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { makeHttpStore, call } from './helpers.mjs';
import { toolBehaviours } from '../mcp-shared/tools.behaviours.mjs';
import { httpBehaviours } from '../mcp-shared/http.behaviours.mjs';

toolBehaviours(test, { makeStore: makeHttpStore, call });
httpBehaviours(test, { makeStore: makeHttpStore, call });

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

test('a 2025-11-25 session: its Mcp-Session-Id, and DELETE ends it', async (t) => {
  const store = makeHttpStore(t);
  const { client, transport } = await store.connect();
  assert.match(transport.sessionId, /^[0-9a-f]{32}$/);
  await call(client, 'list_managed_tasks', {});
  await transport.terminateSession();
  await assert.rejects(client.listTools(), (e) => /Mcp-Session-Id header is required|Session not found/.test(String(e.message)));
});

test('the token is required: a wrong one cannot connect', async (t) => {
  const store = makeHttpStore(t);
  const { server } = await store.connect();
  const transport = new StreamableHTTPClientTransport(server.mcpUrl, { requestInit: { headers: { Authorization: 'Bearer nope' } } });
  const client = new Client({ name: 'intruder', version: '1' });
  await assert.rejects(client.connect(transport), (e) => /401|unauthorized/i.test(String(e.message)));
  // What the user sees names the token file (issue 29.5).
  const bare = new Client({ name: 'intruder', version: '1' });
  await assert.rejects(bare.connect(new StreamableHTTPClientTransport(server.mcpUrl)),
    (e) => /unauthorized/i.test(e.message) && e.message.includes(join(store.dir, 'serve.token')) && e.message.includes('Authorization: Bearer'));
});

test('a long-poll longer than the hold time is answered on an SSE stream', async (t) => {
  const store = makeHttpStore(t);
  const { client } = await store.connect();
  await call(client, 'start_managed_task', { taskKey: 'late', command: 'sleep 12; echo done-late', waitMs: 0 });
  const r = await call(client, 'read_managed_task', { taskKey: 'late', waitMs: 40000 });
  assert.equal(r.structuredContent.state, 'completed');
  assert.match(r.content[0].text, /done-late/);
});

