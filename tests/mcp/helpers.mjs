// Shared pieces of the MCP tests: a temporary store per test, the real
// `taskfs mcp` server driven by the official SDK client over stdio, and
// cleanup that stops every task left running and removes the store.
import { resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { cancelEverything, serverEnvOf, tempStore } from '../mcp-shared/store.mjs';

export const TASKFS_BIN = resolve(process.env.TASKFS_BIN ?? '../../build/taskfs');

export const serverEnv = () => serverEnvOf(getDefaultEnvironment());

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
      const client = new Client({ name: 'taskfs-tests', version: '1.0.0' }, { capabilities: opts.roots ? { roots: {} } : {} });
      if (opts.roots) client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: opts.roots }));
      await client.connect(transport);
      clients.push(client);
      await client.listTools(); // caches output schemas and task support
      return { client, transport, stderr: () => stderr };
    },
  };
}

// Cancels every task still running in dir (through a server of its own),
// so that no supervisor outlives the test.
export async function stopAll(dir) {
  const transport = new StdioClientTransport({
    command: TASKFS_BIN, args: ['mcp', '--state-dir', dir], env: serverEnv(), stderr: 'ignore',
  });
  const client = new Client({ name: 'taskfs-cleanup', version: '1.0.0' });
  await cancelEverything(client, () => client.connect(transport));
}

export async function call(client, name, args, opts) {
  return client.callTool({ name, arguments: args }, undefined, opts);
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
