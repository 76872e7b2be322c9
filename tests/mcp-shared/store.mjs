// What both MCP test projects share about the server they start: a
// temporary store per test that is cleaned up (every task left running
// stopped, through the project's own client) even when the test fails, and
// the environment the server gets (the client's safe default plus the
// sanitizer options, so that an ASan/UBSan build reports through them).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// The SDKs give up on a request after 60 s by default; under load (an
// ASan build, a busy core) a long read_managed_task took longer. Every
// request of the tests' clients gets this bound instead, a guard against
// a hang and never a verdict on speed (tests/README.md); a request that
// passes its own timeout keeps it.
export const REQUEST_TIMEOUT_MS = 600000;

// Makes client's requests patient: method is the SDK's one funnel of
// requests (1.x: request(request, schema, options); 2.x:
// _requestWithSchemaViaCodec(codec, request, schema, options)), at is the
// index of its options. Returns client.
export function patient(client, method, at) {
  const send = client[method].bind(client);
  client[method] = (...args) => {
    args[at] = { timeout: REQUEST_TIMEOUT_MS, ...(args[at] ?? {}) };
    return send(...args);
  };
  return client;
}

export function serverEnvOf(defaults, extra = {}) {
  const env = { ...defaults };
  for (const k of ['ASAN_OPTIONS', 'UBSAN_OPTIONS', 'LSAN_OPTIONS'])
    if (process.env[k]) env[k] = process.env[k];
  return { ...env, ...extra };
}

// A fresh store for test t; its clients are closed and stopAll(dir) run
// after the test. Returns { dir, clients } (push each client opened).
export function tempStore(t, prefix, stopAll) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const clients = [];
  t.after(async () => {
    for (const c of clients) await c.close().catch(() => {});
    await stopAll(dir);
    rmSync(dir, { recursive: true, force: true });
  });
  return { dir, clients };
}

// Cancels every task still running or queued in dir through a client of
// the project's own, connected by connect(); best effort (cleanup).
export async function cancelEverything(client, connect) {
  try {
    await connect();
    for (const state of ['running', 'paused', 'queued']) {
      const r = await client.callTool({ name: 'list_managed_tasks', arguments: { state, limit: 500 } });
      for (const x of r.structuredContent?.tasks ?? [])
        await client.callTool({ name: 'cancel_managed_task', arguments: { taskId: x.taskId } });
    }
  } catch { /* best effort */ }
  await client.close().catch(() => {});
}
