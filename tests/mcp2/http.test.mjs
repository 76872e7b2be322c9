// The managed-task tools over Streamable HTTP: `taskfs serve` driven by
// @modelcontextprotocol/client 2.4.0 pinned to 2026-07-28 (stateless: no
// session, the request headers, a stream per request), the same
// behaviours as over stdio (../mcp-shared/tools.behaviours.mjs), then
// what HTTP adds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { makeHttpStore, call } from './helpers.mjs';
import { toolBehaviours } from '../mcp-shared/tools.behaviours.mjs';
import { httpBehaviours } from '../mcp-shared/http.behaviours.mjs';

toolBehaviours(test, { makeStore: makeHttpStore, call });
httpBehaviours(test, { makeStore: makeHttpStore, call });

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { PROTOCOL } from './helpers.mjs';

test('2026-07-28 over HTTP is stateless: no session, POST only, one stream per request', async (t) => {
  const store = makeHttpStore(t);
  const { client, transport, server } = await store.connect();
  assert.equal(transport.sessionId, undefined);
  await call(client, 'list_managed_tasks', {});
  // GET and DELETE belong to 2025-11-25 sessions.
  const get = await fetch(server.mcpUrl, { headers: { ...server.headers, Accept: 'text/event-stream', 'MCP-Protocol-Version': PROTOCOL } });
  assert.equal(get.status, 405);
  assert.equal(get.headers.get('allow'), 'POST');
  // An inbound Mcp-Session-Id is ignored, never echoed.
  const body = { jsonrpc: '2.0', id: 7, method: 'tools/list', params: { _meta: {
    'io.modelcontextprotocol/protocolVersion': PROTOCOL, 'io.modelcontextprotocol/clientCapabilities': {} } } };
  const post = await fetch(server.mcpUrl, { method: 'POST', body: JSON.stringify(body), headers: {
    ...server.headers, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
    'MCP-Protocol-Version': PROTOCOL, 'Mcp-Method': 'tools/list', 'Mcp-Session-Id': 'made-up' } });
  assert.equal(post.status, 200);
  assert.equal(post.headers.get('mcp-session-id'), null);
  assert.equal((await post.json()).result.resultType, 'complete');
});

test('the token is required: the v2 client without it cannot connect', async (t) => {
  const store = makeHttpStore(t);
  const { server } = await store.connect();
  const client = new Client({ name: 'intruder', version: '1' }, { versionNegotiation: { mode: { pin: PROTOCOL } } });
  await assert.rejects(client.connect(new StreamableHTTPClientTransport(server.mcpUrl,
    { requestInit: { headers: { Authorization: 'Bearer wrong' } } })), (e) => /401|unauthorized/i.test(String(e.message)));
  // What the user sees names the token file (issue 29.5): a pinned client
  // words the probe's 401 itself and keeps the body in data.text, which is
  // what printing the error shows; a negotiating one puts the body in its
  // message.
  const file = join(store.dir, 'serve.token');
  const pinned = new Client({ name: 'intruder', version: '1' }, { versionNegotiation: { mode: { pin: PROTOCOL } } });
  await assert.rejects(pinned.connect(new StreamableHTTPClientTransport(server.mcpUrl)),
    (e) => e.status === 401 && inspect(e).includes(file) && e.data.text.includes('Authorization: Bearer'));
  const negotiating = new Client({ name: 'intruder', version: '1' });
  await assert.rejects(negotiating.connect(new StreamableHTTPClientTransport(server.mcpUrl)),
    (e) => e.message.includes(file));
});

