// What both MCP test projects share about the server they start: a
// temporary store per test that is cleaned up (every task left running
// stopped, through the project's own client) even when the test fails, and
// the environment the server gets (the client's safe default plus the
// sanitizer options, so that an ASan/UBSan build reports through them).
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
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

// Ends, with SIGKILL, every process of dir: those whose command line names
// it (the supervisors, servers and mounts of a store in it) or that run in
// it, with the process group of each (a supervisor runs its task in a group
// of its own, which outlives a supervisor killed alone); then waits until
// none is left (a 60 s guard). A test's last word on what it started, also
// when it failed; the C tests' tu_end_procs() does the same.
export async function endProcs(dir) {
  const mine = (pid) => {
    try {
      const cwd = readlinkSync(`/proc/${pid}/cwd`);
      if (cwd === dir || cwd.startsWith(`${dir}/`)) return true;
    } catch { /* gone, or not ours to read */ }
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').join(' ').includes(dir);
    } catch { return false; }
  };
  for (let round = 0; round < 3000; round++) {
    const found = readdirSync('/proc').filter((p) => /^\d+$/.test(p) && Number(p) !== process.pid && mine(p));
    if (!found.length) return;
    for (const p of found) {
      try {
        // The process group is field 5 of stat, after the ')' of the name.
        const pgid = Number(readFileSync(`/proc/${p}/stat`, 'latin1').split(') ')[1].split(' ')[2]);
        if (pgid > 1 && pgid !== process.pid) process.kill(-pgid, 'SIGKILL');
      } catch { /* gone already */ }
      try { process.kill(Number(p), 'SIGKILL'); } catch { /* gone already */ }
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

// A fresh store for test t; its clients are closed and stopAll(dir) run
// after the test. Returns { dir, clients } (push each client opened).
export function tempStore(t, prefix, stopAll) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const clients = [];
  t.after(async () => {
    for (const c of clients) await c.close().catch(() => {});
    await stopAll(dir);
    await endProcs(dir);
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
