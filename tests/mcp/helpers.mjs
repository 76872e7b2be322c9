// Shared pieces of the MCP tests: a temporary store per test, the real
// `taskfs mcp` server driven by the official SDK client over stdio, and
// cleanup that stops every task left running and removes the store.
import { resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { cancelEverything, patient, serverEnvOf, tempStore } from '../mcp-shared/store.mjs';
import { startServe } from '../mcp-shared/serve.mjs';

export const TASKFS_BIN = resolve(process.env.TASKFS_BIN ?? '../../build/taskfs');

export const serverEnv = () => serverEnvOf(getDefaultEnvironment());

// A 1.x client whose requests wait up to REQUEST_TIMEOUT_MS (store.mjs).
export const newClient = (options, name = 'taskfs-tests') =>
  patient(new Client({ name, version: '1.0.0' }, options), 'request', 2);

export function makeStore(t) {
  const { dir, clients } = tempStore(t, 'taskfs-mcp-test-', stopAll);
  return {
    dir,
    // Connects a new client to a new server process on this store
    // (opts.env: more environment for the server).
    async connect(opts = {}) {
      const transport = new StdioClientTransport({
        command: TASKFS_BIN,
        args: ['mcp', '--state-dir', dir],
        env: { ...serverEnv(), ...(opts.env ?? {}) },
        stderr: 'pipe',
      });
      let stderr = '';
      transport.stderr?.on('data', (d) => { stderr += d; });
      // opts.roots: the client declares roots and answers roots/list.
      const client = newClient({ capabilities: opts.roots ? { roots: {} } : {} });
      if (opts.roots) client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: opts.roots }));
      await client.connect(transport);
      clients.push(client);
      await client.listTools(); // caches output schemas and task support
      return { client, transport, stderr: () => stderr };
    },
  };
}

// The same over HTTP: each connect starts a `taskfs serve` of its own on
// the store and connects through Streamable HTTP with the bearer token
// (transport.pid is the server's, so a test can kill it).
export function makeHttpStore(t) {
  const { dir, clients } = tempStore(t, 'taskfs-mcp-http-test-', stopAll);
  return {
    dir,
    async connect(opts = {}) {
      const srv = await startServe(TASKFS_BIN, dir, { ...serverEnv(), ...(opts.env ?? {}) });
      clients.push({ close: () => srv.stop() });
      const transport = new StreamableHTTPClientTransport(srv.mcpUrl, { requestInit: { headers: srv.headers } });
      transport.pid = srv.pid;
      const client = newClient({ capabilities: opts.roots ? { roots: {} } : {} });
      if (opts.roots) client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: opts.roots }));
      await client.connect(transport);
      clients.unshift(client);
      await client.listTools();
      return { client, transport, server: srv, stderr: () => srv.stderr() };
    },
  };
}

// Cancels every task still running in dir (through a server of its own),
// so that no supervisor outlives the test.
export async function stopAll(dir) {
  const transport = new StdioClientTransport({
    command: TASKFS_BIN, args: ['mcp', '--state-dir', dir], env: serverEnv(), stderr: 'ignore',
  });
  const client = newClient({}, 'taskfs-cleanup');
  await cancelEverything(client, () => client.connect(transport));
}

export async function call(client, name, args, opts) {
  return client.callTool({ name, arguments: args }, undefined, opts);
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Runs test fn(t, makeStore) twice: over stdio and over HTTP.
export function overBoth(test, name, fn) {
  test(name, (t) => fn(t, makeStore));
  test(`${name} (HTTP)`, (t) => fn(t, makeHttpStore));
}
