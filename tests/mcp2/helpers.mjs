// Shared pieces of the v2 tests: a temporary store per test, the real
// `taskfs mcp` driven by @modelcontextprotocol/client 2.4.0 pinned to
// protocol 2026-07-28 over stdio (connect() probes with server/discover in
// a child of its own, then starts the real one), a raw-dispatch seam for
// what the client does not take itself (a tools/call answered with a task),
// and cleanup that stops every task left running and removes the store.
import { resolve } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/client/stdio';
import { z } from 'zod';
import { cancelEverything, patient, serverEnvOf, tempStore } from '../mcp-shared/store.mjs';
import { startServe } from '../mcp-shared/serve.mjs';

export const TASKFS_BIN = resolve(process.env.TASKFS_BIN ?? '../../build/taskfs');
export const PROTOCOL = '2026-07-28';
export const TASKS = 'io.modelcontextprotocol/tasks';
export const Any = z.object({}).passthrough();

export const serverEnv = (extra) => serverEnvOf(getDefaultEnvironment(), extra);

// A client pinned to 2026-07-28; opts.roots: declared and answered (MRTR),
// opts.tasks: the tasks extension declared.
function newClient(opts = {}) {
  const capabilities = {};
  if (opts.roots) capabilities.roots = {};
  if (opts.tasks) capabilities.extensions = { [TASKS]: {} };
  // Requests wait up to REQUEST_TIMEOUT_MS (store.mjs).
  const client = patient(new Client({ name: 'taskfs-tests-v2', version: '1.0.0' },
    { capabilities, versionNegotiation: { mode: { pin: PROTOCOL } } }), '_requestWithSchemaViaCodec', 3);
  if (opts.roots) client.setRequestHandler('roots/list', async () => ({ roots: opts.roots }));
  return { client, capabilities };
}

export function makeStore(t) {
  const { dir, clients } = tempStore(t, 'taskfs-mcp2-test-', stopAll);
  return {
    dir,
    async connect(opts = {}) {
      const transport = new StdioClientTransport({
        command: TASKFS_BIN, args: ['mcp', '--state-dir', dir], env: serverEnv(opts.env), stderr: 'pipe',
      });
      let stderr = '';
      const { client, capabilities } = newClient(opts);
      await client.connect(transport);
      // The pipe exists once the (real) child runs; what it wrote waits in it.
      transport.stderr?.on('data', (d) => { stderr += d; });
      clients.push(client);
      return { client, transport, stderr: () => stderr, raw: rawSeam(transport, capabilities) };
    },
  };
}

// The same over HTTP: each connect starts a `taskfs serve` of its own on
// the store and connects through Streamable HTTP with the bearer token
// (the client probes with server/discover on that server itself;
// transport.pid is the server's, so a test can kill it).
export function makeHttpStore(t) {
  const { dir, clients } = tempStore(t, 'taskfs-mcp2-http-test-', stopAll);
  return {
    dir,
    async connect(opts = {}) {
      const srv = await startServe(TASKFS_BIN, dir, serverEnv(opts.env));
      clients.push({ close: () => srv.stop() });
      const transport = new StreamableHTTPClientTransport(srv.mcpUrl, { requestInit: { headers: srv.headers } });
      const { client, capabilities } = newClient(opts);
      await client.connect(transport);
      transport.pid = srv.pid;
      clients.unshift(client);
      return { client, transport, server: srv, stderr: () => srv.stderr(), raw: rawSeam(transport, capabilities) };
    },
  };
}

// Sends a request on the client's own transport with the 2026-07-28
// envelope and takes its response before the Client sees it: for answers
// the Client refuses by design (a tools/call answered with resultType
// "task") and for requests it would not send.
function rawSeam(transport, capabilities) {
  const pending = new Map();
  const onmessage = transport.onmessage;
  transport.onmessage = (message, extra) => {
    const waiter = message && 'id' in message && !('method' in message) ? pending.get(message.id) : undefined;
    if (waiter) {
      pending.delete(message.id);
      waiter(message);
    } else onmessage?.(message, extra);
  };
  let seq = 0;
  // raw.start(): { id, answer } without waiting (a listen answers at its end).
  const start = (method, params = {}, meta = {}) => {
    const id = `raw:${++seq}`;
    const envelope = {
      'io.modelcontextprotocol/protocolVersion': PROTOCOL,
      'io.modelcontextprotocol/clientInfo': { name: 'taskfs-tests-v2', version: '1.0.0' },
      'io.modelcontextprotocol/clientCapabilities': capabilities,
      ...meta,
    };
    const answer = new Promise((res) => pending.set(id, res));
    const sent = transport.send({ jsonrpc: '2.0', id, method, params: { ...params, _meta: { ...envelope, ...params._meta } } })
      .catch((e) => {
        // Over HTTP an unknown method is a 404 whose body is the JSON-RPC
        // error; the client hands only a 400's body on as a message.
        const m = (() => { try { return JSON.parse(e?.data?.text); } catch { return null; } })();
        if (m?.id !== id) throw e;
        pending.get(id)?.({ ...m, httpStatus: e.data.status });
        pending.delete(id);
      });
    return { id, answer: sent.then(() => answer) };
  };
  const raw = (method, params, meta) => start(method, params, meta).answer;
  raw.start = start;
  raw.notify = (method, params) => transport.send({ jsonrpc: '2.0', method, params });
  return raw;
}

// Cancels every task still running in dir, through a client of its own.
export async function stopAll(dir) {
  const { client } = newClient();
  const transport = new StdioClientTransport({ command: TASKFS_BIN, args: ['mcp', '--state-dir', dir], env: serverEnv(), stderr: 'ignore' });
  await cancelEverything(client, () => client.connect(transport));
}

export async function call(client, name, args, opts) {
  return client.callTool({ name, arguments: args }, opts);
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Runs test fn(t, makeStore) twice: over stdio and over HTTP.
export function overBoth(test, name, fn) {
  test(name, (t) => fn(t, makeStore));
  test(`${name} (HTTP)`, (t) => fn(t, makeHttpStore));
}
