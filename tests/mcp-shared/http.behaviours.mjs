// What the MCP tools do over HTTP that stdio has no counterpart for,
// written once and run by both clients' http.test.mjs: tests/mcp (SDK 1.x,
// 2025-11-25 sessions) and tests/mcp2 (the v2 client, 2026-07-28
// stateless), each with its own helpers.
import assert from 'node:assert/strict';

export function httpBehaviours(test, { makeStore, call }) {
  test('a client that leaves mid-long-poll: the task goes on, the server serves on', async (t) => {
    const store = makeStore(t);
    const { client } = await store.connect();
    await call(client, 'start_managed_task', { taskKey: 'bg', command: ['sleep', 'infinity'], waitMs: 0 });
    const ac = new AbortController();
    const waiting = call(client, 'read_managed_task', { taskKey: 'bg', waitMs: 30000 }, { signal: ac.signal });
    setTimeout(() => ac.abort(), 300);
    await assert.rejects(waiting);
    const r = await call(client, 'read_managed_task', { taskKey: 'bg' });
    assert.equal(r.structuredContent.state, 'running');
    const c = await call(client, 'cancel_managed_task', { taskKey: 'bg', waitMs: 20000 });
    assert.equal(c.structuredContent.state, 'cancelled');
  });
}
