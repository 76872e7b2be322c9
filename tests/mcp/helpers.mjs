// Shared pieces of the MCP tests: a temporary store per test, the real
// `taskfs mcp` server driven by the official SDK client over stdio, and
// cleanup that stops every task left running and removes the store.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';

export const TASKFS_BIN = resolve(process.env.TASKFS_BIN ?? '../../build/taskfs');

// The server's environment: the SDK's safe default, plus sanitizer options
// so that an ASan/UBSan build reports through the same settings.
export function serverEnv() {
  const env = getDefaultEnvironment();
  for (const k of ['ASAN_OPTIONS', 'UBSAN_OPTIONS', 'LSAN_OPTIONS'])
    if (process.env[k]) env[k] = process.env[k];
  return env;
}

export function makeStore(t) {
  const dir = mkdtempSync(join(tmpdir(), 'taskfs-mcp-test-'));
  const clients = [];
  t.after(async () => {
    for (const c of clients) await c.close().catch(() => {});
    await stopAll(dir);
    rmSync(dir, { recursive: true, force: true });
  });
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
      const client = new Client({ name: 'taskfs-tests', version: '1.0.0' }, { capabilities: {} });
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
  try {
    await client.connect(transport);
    for (const state of ['running', 'queued']) {
      const r = await client.callTool({ name: 'list_managed_tasks', arguments: { state, limit: 500 } });
      for (const t of r.structuredContent?.tasks ?? [])
        await client.callTool({ name: 'cancel_managed_task', arguments: { taskId: t.taskId } });
    }
  } catch { /* best effort */ }
  await client.close().catch(() => {});
}

export async function call(client, name, args, opts) {
  return client.callTool({ name, arguments: args }, undefined, opts);
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
