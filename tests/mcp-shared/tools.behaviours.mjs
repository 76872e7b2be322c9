// The managed-task tools' behaviours, written once and run by both
// clients: tests/mcp (SDK 1.32.2, 2025-11-25) and tests/mcp2 (client 2.4.0
// pinned to 2026-07-28) call toolBehaviours() with their own helpers
// (makeStore, call). Idempotent start, long-polls, bounded responses,
// untilPattern, cancel, two servers on one store, a server killed mid-call,
// the restart policy, the default cwd and argument checking.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

// Resolves once a read_managed_task sent just before on client is waiting
// on the server: a server handles one client's requests in the order they
// came (one stdio stream; over HTTP the read's request went out first), so
// a later request answered means the read has begun. What the read waits
// for may then be made to happen: an event, not a pause.
// (call: the project's own, as toolBehaviours takes it).
export async function readIsParked(call, client) {
  await call(client, 'list_managed_tasks', { limit: 1 });
}

// probes: the client starts a server of its own to probe with
// server/discover before the real one (the v2 client over stdio).
export function toolBehaviours(test, { makeStore, call, probes = false }) {
  test('start twice with the same key runs once; a different command is rejected', async (t) => {
    const store = makeStore(t);
    const { client } = await store.connect();
    const side = join(store.dir, 'side-effect');
    const command = `echo ran >> '${side}'; echo done`;
    const a = await call(client, 'start_managed_task', { taskKey: 'once', command, waitMs: 20000 });
    assert.equal(a.isError, undefined, JSON.stringify(a.content));
    assert.equal(a.structuredContent.state, 'completed');
    assert.equal(a.structuredContent.started, true);
    const b = await call(client, 'start_managed_task', { taskKey: 'once', command, waitMs: 20000 });
    assert.equal(b.structuredContent.taskId, a.structuredContent.taskId);
    assert.equal(b.structuredContent.existing, true);
    assert.match(b.structuredContent.hint, /rerun: true/);
    assert.equal(readFileSync(side, 'utf8'), 'ran\n', 'the command ran exactly once');
    // The text block carries the same JSON.
    assert.deepEqual(JSON.parse(b.content[0].text), b.structuredContent);
    const c = await call(client, 'start_managed_task', { taskKey: 'once', command: ['echo', 'other'] });
    assert.equal(c.isError, true);
    assert.match(c.content[0].text, /already names a different command/);
    // rerun: true runs it again under the same key, as a new task.
    const d = await call(client, 'start_managed_task', { taskKey: 'once', command, rerun: true, waitMs: 20000 });
    assert.notEqual(d.structuredContent.taskId, a.structuredContent.taskId);
    assert.equal(d.structuredContent.state, 'completed');
    assert.equal(readFileSync(side, 'utf8'), 'ran\nran\n');
    // Bad arguments are tool errors that say what to do.
    const e = await call(client, 'start_managed_task', { taskKey: 'bad key!', command: 'true' });
    assert.equal(e.isError, true);
    assert.match(e.content[0].text, /taskKey/);
    const e2 = await call(client, 'read_managed_task', { taskKey: 'a' + 'é'.repeat(100) }); // message cut mid-character
    assert.equal(e2.isError, true);
    assert.match(e2.content[0].text, /is not valid/);
    const f = await call(client, 'start_managed_task', { taskKey: 'k', command: 'true', cwd: 'relative' });
    assert.match(f.content[0].text, /absolute/);
    // Wrongly typed arguments are reported as such, bounds as the schema has them.
    const t1 = await call(client, 'read_managed_task', { taskKey: 123 });
    assert.equal(t1.isError, true);
    assert.match(t1.content[0].text, /taskKey must be a string \(got the number 123\)/);
    const t2 = await call(client, 'read_managed_task', { taskKey: 'once', waitMs: -1 });
    assert.match(t2.content[0].text, /waitMs must be an integer from 0 to 50000 \(got the number -1\)/);
    const t3 = await call(client, 'start_managed_task', { taskKey: 'k', command: 'true', restart: 'sometimes' });
    assert.match(t3.content[0].text, /restart must be one of no, on-failure, always/);
    const g = await call(client, 'read_managed_task', { taskKey: 'nope' });
    assert.equal(g.isError, true);
    assert.match(g.content[0].text, /no task has the key/);
  });
  test('a timeout and limits: the task ends at its timeout, the answer says what it used', async (t) => {
    const store = makeStore(t);
    const { client } = await store.connect();
    const r = await call(client, 'start_managed_task', {
      taskKey: 'limited', command: "trap '' TERM; sleep 300", timeoutMs: 500, graceMs: 200, waitMs: 30000,
      limits: { cpu: '10m', mem: 2147483648, core: 0 },
    });
    assert.equal(r.isError, undefined, JSON.stringify(r.content));
    assert.equal(r.structuredContent.state, 'failed');
    assert.equal(r.structuredContent.exitCode, 124);
    assert.match(r.structuredContent.reason, /^timed out after 500ms; the worker was killed by signal SIGKILL/);
    assert.equal(typeof r.structuredContent.cpuMs, 'number');
    assert.ok(r.structuredContent.maxRssKb > 0);
    const rec = JSON.parse(readFileSync(join(store.dir, 'tasks', r.structuredContent.taskId, 'record.json'), 'utf8'));
    assert.equal(rec.limits.timeout.ms, 500);
    assert.equal(rec.limits.cpu.value, 600);
    assert.equal(rec.restart.exits[0].timedOut, true);
    const l = await call(client, 'list_managed_tasks', {});
    assert.equal(typeof l.structuredContent.tasks[0].cpuMs, 'number');
    const bad = await call(client, 'start_managed_task', { taskKey: 'l2', command: 'true', limits: { swap: '1G' } });
    assert.equal(bad.isError, true);
    assert.match(bad.content[0].text, /unknown limit 'swap'/);
  });
  test('env values reach the process and never the disk', async (t) => {
    const store = makeStore(t);
    const { client } = await store.connect();
    const r = await call(client, 'start_managed_task', {
      taskKey: 'env', command: 'echo "value=$SECRET_THING"', env: { SECRET_THING: 's3cr3t-v4lue' }, waitMs: 20000,
    });
    assert.equal(r.structuredContent.state, 'completed');
    assert.deepEqual(r.structuredContent.tail, ['value=s3cr3t-v4lue']);
    const rec = readFileSync(join(store.dir, 'tasks', r.structuredContent.taskId, 'record.json'), 'utf8');
    assert.ok(rec.includes('SECRET_THING'));
    assert.ok(!rec.includes('s3cr3t-v4lue'));
  });
  test('long-poll to completion', async (t) => {
    const store = makeStore(t);
    const { client } = await store.connect();
    const s = await call(client, 'start_managed_task', { taskKey: 'slow', command: 'sleep 1; echo finished', waitMs: 0 });
    assert.ok(['queued', 'running'].includes(s.structuredContent.state));
    const r = await call(client, 'read_managed_task', { taskKey: 'slow', waitMs: 30000 });
    assert.equal(r.structuredContent.state, 'completed');
    assert.equal(r.structuredContent.exitCode, 0);
    assert.equal(r.structuredContent.timedOut, false);
    assert.deepEqual(r.structuredContent.tail, ['finished']);
    assert.ok(r.structuredContent.durationMs >= 900);
    // A failing command reads failed with its exit code.
    const f = await call(client, 'start_managed_task', { taskKey: 'fail', command: 'echo oops; exit 3', waitMs: 20000 });
    assert.equal(f.structuredContent.state, 'failed');
    assert.equal(f.structuredContent.exitCode, 3);
  });
  test('an early error survives 100,000 lines of noise; the response stays bounded', async (t) => {
    const store = makeStore(t);
    const { client } = await store.connect();
    const command = 'echo "error: the first failure"; seq 1 100000 | sed "s/^/noise line /"; ' +
      'head -c 20000 /dev/zero | tr "\\0" a; echo; printf "\\377\\376 bad utf8\\n"';
    const r = await call(client, 'start_managed_task', { taskKey: 'noisy', command, waitMs: 50000 });
    const sc = r.structuredContent;
    assert.equal(sc.state, 'completed', JSON.stringify(sc).slice(0, 500));
    assert.equal(sc.lines, 100003);
    assert.equal(sc.important.first[0].line, 1);
    assert.match(sc.important.first[0].text, /error: the first failure/);
    const size = Buffer.byteLength(JSON.stringify(r));
    assert.ok(size <= 4096, `response is ${size} bytes`);
    assert.ok(sc.tail.length >= 1);
    assert.ok(sc.tail.at(-1).includes('\ufffd'), 'invalid UTF-8 sanitised');
    assert.ok(sc.tail.some((l) => /\[cut 19\d\d\d bytes\]/.test(l)), 'long line cut and marked');
    assert.equal(sc.nextLine, 100003);
    // sinceLine pages through the transcript.
    const p = await call(client, 'read_managed_task', { taskKey: 'noisy', sinceLine: 50000, tailLines: 5 });
    assert.equal(p.structuredContent.tailFrom, 50001);
    assert.deepEqual(p.structuredContent.tail, ['noise line 50000', 'noise line 50001', 'noise line 50002', 'noise line 50003', 'noise line 50004']);
    assert.equal(p.structuredContent.nextLine, 50005);
    const p2 = await call(client, 'read_managed_task', { taskKey: 'noisy', sinceLine: p.structuredContent.nextLine, tailLines: 1 });
    assert.deepEqual(p2.structuredContent.tail, ['noise line 50005']);
  });
  test('untilPattern returns when a new line matches', async (t) => {
    const store = makeStore(t);
    const { client } = await store.connect();
    // The line comes once the read waits (the gate), never after a pause:
    // only lines written after the read began count, so a read that came
    // late on a slow machine would have waited out its 40 s.
    const gate = join(store.dir, 'gate');
    await call(client, 'start_managed_task', {
      taskKey: 'server', waitMs: 0,
      command: `echo starting; until [ -e '${gate}' ]; do sleep 0.05; done; echo "listening on port 8080"; exec sleep infinity`,
    });
    const t0 = Date.now();
    const reading = call(client, 'read_managed_task', { taskKey: 'server', untilPattern: 'listening on port [0-9]+', waitMs: 40000 });
    await readIsParked(call, client);
    writeFileSync(gate, '');
    const r = await reading;
    assert.ok(Date.now() - t0 < 30000, 'not held for the 40 s wait'); // the bound is the wait, not a speed
    assert.equal(r.structuredContent.state, 'running');
    assert.equal(r.structuredContent.timedOut, false);
    assert.equal(r.structuredContent.match.line, 2);
    assert.equal(r.structuredContent.match.text, 'listening on port 8080');
    // A waiting read does not block the others.
    const pending = call(client, 'read_managed_task', { taskKey: 'server', untilPattern: 'never printed', waitMs: 1500 });
    const list = await call(client, 'list_managed_tasks', {});
    assert.equal(list.structuredContent.tasks.length, 1);
    assert.equal(list.structuredContent.tasks[0].state, 'running');
    const timedOut = await pending;
    assert.equal(timedOut.structuredContent.timedOut, true);
    assert.equal(timedOut.structuredContent.match, undefined);
    // start_managed_task takes untilPattern too: every line of the new task
    // counts, even one printed before the server began to watch.
    const t1 = Date.now();
    const st = await call(client, 'start_managed_task', { taskKey: 'ready', command: 'echo ready-now; exec sleep infinity', untilPattern: 'ready-now', waitMs: 40000 });
    assert.ok(Date.now() - t1 < 30000, 'not held for the 40 s wait');
    assert.equal(st.structuredContent.state, 'running');
    assert.equal(st.structuredContent.match.line, 1);
    const bad = await call(client, 'read_managed_task', { taskKey: 'server', untilPattern: '(unclosed' });
    assert.equal(bad.isError, true);
    assert.match(bad.content[0].text, /is not a valid pattern \(PCRE2 syntax\): missing closing parenthesis at offset 9/);
  });
  test('hostile numbers and patterns cost the caller an error, never the server', async (t) => {
    const store = makeStore(t);
    const { client } = await store.connect();
    const s = await call(client, 'start_managed_task', {
      taskKey: 'aaa', command: "head -c 4000 /dev/zero | tr '\\0' a; echo '!'; echo abab done", waitMs: 20000,
    });
    assert.equal(s.structuredContent.state, 'completed');
    const taskId = s.structuredContent.taskId;
    // Numbers: each refused naming the argument and its bounds. 2**63 is
    // beyond int64 (it reached the server as a parse error before).
    for (const [arg, value, bound] of [
      ['sinceLine', 2 ** 63, 'from 0 to 9007199254740991'],
      ['sinceLine', Number.MAX_SAFE_INTEGER + 2, 'from 0 to 9007199254740991'],
      ['waitMs', 1e300, 'from 0 to 50000'],
      ['waitMs', -1e300, 'from 0 to 50000'],
      ['tailLines', 1.5, 'from 0 to 1000'],
      ['maxBytes', 2 ** 64, 'from 1024 to 262144'],
    ]) {
      const r = await call(client, 'read_managed_task', { taskId, [arg]: value });
      assert.equal(r.isError, true, `${arg}: ${value}`);
      assert.match(r.content[0].text, new RegExp(`${arg} must be an integer ${bound}`), r.content[0].text);
    }
    const z = await call(client, 'read_managed_task', { taskId, sinceLine: -0, tailLines: 1 });
    assert.equal(z.structuredContent.tail.length, 1);
    assert.equal(z.structuredContent.tailFrom, 1, '-0 is line 0: the page starts at line 1');
    // A pattern that backtracks for ever on the 4000-byte line: the match
    // limit, named; a back-reference is allowed (bounded like the rest).
    const bt = await call(client, 'read_managed_task', { taskId, sinceLine: 0, untilPattern: '(a+)+$' });
    assert.equal(bt.isError, true);
    assert.match(bt.content[0].text, /untilPattern hit the match limit \(100000 steps\) on line 1/);
    const br = await call(client, 'read_managed_task', { taskId, sinceLine: 0, untilPattern: '(ab)\\1 done$' });
    assert.equal(br.structuredContent.match.line, 2);
    const big = await call(client, 'read_managed_task', { taskId, untilPattern: '(((a{0,20}){0,20}){0,20}){0,20}' });
    assert.match(big.content[0].text, /too large once compiled/);
    // While a costly match runs, the server answers the others.
    const slow = call(client, 'read_managed_task', { taskId, sinceLine: 0, untilPattern: '((a{1,30}){1,30}){1,30}x' });
    const list = await call(client, 'list_managed_tasks', {});
    assert.equal(list.structuredContent.tasks.length, 1);
    assert.equal((await slow).structuredContent.match, undefined);
  });
  test('cancel a running task', async (t) => {
    const store = makeStore(t);
    const { client } = await store.connect();
    const s = await call(client, 'start_managed_task', { taskKey: 'long', command: ['sleep', 'infinity'], waitMs: 0 });
    const c = await call(client, 'cancel_managed_task', { taskId: s.structuredContent.taskId });
    assert.equal(c.structuredContent.state, 'cancelled');
    assert.equal(c.structuredContent.stopped, true);
    const again = await call(client, 'cancel_managed_task', { taskKey: 'long' });
    assert.equal(again.isError, undefined);
    assert.equal(again.structuredContent.alreadyEnded, true);
    assert.equal(again.structuredContent.state, 'cancelled');
  });
  test('a second server lists and cancels the first one\'s task', async (t) => {
    const store = makeStore(t);
    const a = await store.connect();
    const s = await call(a.client, 'start_managed_task', { taskKey: 'shared', command: ['sleep', 'infinity'], waitMs: 0 });
    const id = s.structuredContent.taskId;
    const b = await store.connect();
    const list = await call(b.client, 'list_managed_tasks', {});
    const seen = list.structuredContent.tasks.find((x) => x.taskId === id);
    assert.ok(seen, 'the second instance sees the task');
    const c = await call(b.client, 'cancel_managed_task', { taskKey: 'shared' });
    assert.equal(c.structuredContent.state, 'cancelled');
    const r = await call(a.client, 'read_managed_task', { taskId: id });
    assert.equal(r.structuredContent.state, 'cancelled');
    assert.match(r.structuredContent.reason, /(mcp|serve) pid/);
    // The v2 client's discover probe runs in a server of its own first, which
    // is then the store's last owner: the note is its, not b's.
    if (!probes) assert.match(b.stderr(), /another live instance .*pid \d+.* 1 task\(s\) running/);
  });
  test('list pages newest first with a cursor and filters by state', async (t) => {
    const store = makeStore(t);
    const { client } = await store.connect();
    const ids = [];
    for (let i = 0; i < 5; i++) {
      const r = await call(client, 'start_managed_task', { taskKey: `n${i}`, command: i === 2 ? 'exit 1' : 'true', waitMs: 20000 });
      ids.push(r.structuredContent.taskId);
    }
    const p1 = await call(client, 'list_managed_tasks', { limit: 2 });
    assert.deepEqual(p1.structuredContent.tasks.map((x) => x.taskId), [ids[4], ids[3]]);
    const p2 = await call(client, 'list_managed_tasks', { limit: 2, cursor: p1.structuredContent.nextCursor });
    assert.deepEqual(p2.structuredContent.tasks.map((x) => x.taskId), [ids[2], ids[1]]);
    const p3 = await call(client, 'list_managed_tasks', { limit: 2, cursor: p2.structuredContent.nextCursor });
    assert.deepEqual(p3.structuredContent.tasks.map((x) => x.taskId), [ids[0]]);
    assert.equal(p3.structuredContent.nextCursor, undefined);
    const failed = await call(client, 'list_managed_tasks', { state: 'failed' });
    assert.deepEqual(failed.structuredContent.tasks.map((x) => x.taskId), [ids[2]]);
  });
  test('a server killed mid-call: the task goes on, and runs once', async (t) => {
    const store = makeStore(t);
    const a = await store.connect();
    const side = join(store.dir, 'side-effect');
    const gate = join(store.dir, 'gate');
    // The task ends once its server is dead (the gate), not after 1 s: the
    // call must still be waiting for it when the server is killed.
    const command = `echo ran >> '${side}'; until [ -e '${gate}' ]; do sleep 0.05; done; echo done`;
    const inflight = call(a.client, 'start_managed_task', { taskKey: 'k9', command, waitMs: 30000 }).catch((e) => e);
    // Mid-call: once the task has begun (its first line), not after a pause.
    for (let i = 0; i < 2400 && !existsSync(side); i++) await new Promise((r) => setTimeout(r, 50));
    process.kill(a.transport.pid, 'SIGKILL');
    assert.ok((await inflight) instanceof Error, 'the call died with its server');
    writeFileSync(gate, '');
    const b = await store.connect();
    const again = await call(b.client, 'start_managed_task', { taskKey: 'k9', command, waitMs: 30000 });
    assert.equal(again.structuredContent.existing, true);
    const r = await call(b.client, 'read_managed_task', { taskKey: 'k9', waitMs: 30000 });
    assert.equal(r.structuredContent.state, 'completed');
    assert.deepEqual(r.structuredContent.tail, ['done']);
    assert.equal(readFileSync(side, 'utf8'), 'ran\n');
  });
  test('maxBytes bounds the whole result: a 3000-byte command is shortened, the tail keeps 3 lines', async (t) => {
    const store = makeStore(t);
    const { client } = await store.connect();
    const command = `: ${'x'.repeat(3000)}; seq 1 4000 | sed "s/^/${'y'.repeat(200)} /"`;
    const s = await call(client, 'start_managed_task', { taskKey: 'long', command, waitMs: 30000 });
    assert.ok(Buffer.byteLength(JSON.stringify(s)) <= 4096, `start answered ${Buffer.byteLength(JSON.stringify(s))} bytes`);
    assert.equal(s.structuredContent.state, 'completed');
    assert.ok(s.structuredContent.omitted.shortened.includes('command'));
    assert.ok(s.structuredContent.command[2].endsWith('\u2026'));
    assert.ok(s.structuredContent.tail.length >= 3, `tail of ${s.structuredContent.tail.length}`);
    assert.equal(s.structuredContent.tailFrom, 4001 - s.structuredContent.tail.length);
    for (const maxBytes of [1024, 2048, 8192]) {
      const r = await call(client, 'read_managed_task', { taskKey: 'long', maxBytes });
      const size = Buffer.byteLength(JSON.stringify(r));
      assert.ok(size <= maxBytes, `maxBytes ${maxBytes}: ${size} bytes`);
      assert.deepEqual(JSON.parse(r.content[0].text), r.structuredContent);
      const tail = r.structuredContent.tail;
      assert.equal(r.structuredContent.tailFrom ?? null, tail.length ? 4001 - tail.length : null);
    }
  });
  test('small bounds keep the first error: state, exit, reason and the lead before figures and tail', async (t) => {
    const store = makeStore(t);
    const { client } = await store.connect();
    const size = (r) => Buffer.byteLength(JSON.stringify(r));
    // The case: a 2-line failure at maxBytes 1024 lost its one error.
    const a = await call(client, 'start_managed_task', { taskKey: 'oops', command: 'echo hello; echo "fatal: oops" >&2; exit 3', waitMs: 30000, maxBytes: 1024 });
    assert.ok(size(a) <= 1024, `${size(a)} bytes`);
    const sc = a.structuredContent;
    assert.equal(sc.state, 'failed');
    assert.equal(sc.exitCode, 3);
    assert.match(sc.reason, /code 3/);
    assert.ok(sc.important.first.some((l) => l.text === 'fatal: oops'), JSON.stringify(sc));
    assert.deepEqual(JSON.parse(a.content[0].text), sc);
    // Figures go before the error: they are counted in omitted.fields.
    assert.equal(sc.cpuMs, undefined);
    assert.ok(sc.omitted.fields > 0);
    // 200 lines with the error at line 100: kept at 1024 and 1500.
    const b = await call(client, 'start_managed_task', {
      taskKey: 'mid', waitMs: 30000,
      command: 'for i in $(seq 1 200); do if [ $i = 100 ]; then echo "error: broken at line $i"; else echo "line $i of ordinary progress output"; fi; done; exit 1',
    });
    assert.equal(b.structuredContent.state, 'failed');
    for (const maxBytes of [1024, 1500, 2048]) {
      const r = await call(client, 'read_managed_task', { taskKey: 'mid', maxBytes });
      assert.ok(size(r) <= maxBytes, `maxBytes ${maxBytes}: ${size(r)} bytes`);
      assert.equal(r.structuredContent.important.lead, 100, `maxBytes ${maxBytes}`);
      assert.ok(r.structuredContent.important.first.some((l) => l.line === 100 && l.text === 'error: broken at line 100'), `maxBytes ${maxBytes}: ${r.content[0].text}`);
    }
    // A lead of 240 bytes full of quotes (each 2 bytes in the structured
    // copy, 4 in the text copy): whole, or cut with an ellipsis, at 1024.
    const c = await call(client, 'start_managed_task', {
      taskKey: 'quoted', waitMs: 30000,
      command: `seq 1 50; echo 'error: ${'"q" '.repeat(60)}'; seq 1 50; exit 2`,
    });
    assert.equal(c.structuredContent.state, 'failed');
    const r = await call(client, 'read_managed_task', { taskKey: 'quoted', maxBytes: 1024 });
    assert.ok(size(r) <= 1024, `${size(r)} bytes`);
    const lead = r.structuredContent.important.first.find((l) => l.line === r.structuredContent.important.lead);
    assert.ok(lead, r.content[0].text);
    assert.ok(lead.text.startsWith('error: "q" "q"'), lead.text);
    assert.ok(lead.text === `error: ${'"q" '.repeat(60)}`.slice(0, 240) || lead.text.includes('\u2026'), lead.text);
  });
  test('restart policy, uptime, restart count and grace, as the CLI has them', async (t) => {
    const store = makeStore(t);
    const { client } = await store.connect();
    // Two quick deaths in a row are one more than maxQuickRestarts 1: a crash loop.
    const r = await call(client, 'start_managed_task', {
      taskKey: 'crashy', command: 'echo died; exit 1', restart: 'on-failure', maxQuickRestarts: 1, minUptimeMs: 5000, waitMs: 30000,
    });
    assert.equal(r.structuredContent.state, 'failed');
    assert.equal(r.structuredContent.restarts, 1);
    assert.match(r.structuredContent.reason, /crash loop/);
    // maxRestarts is a total: slow deaths count too, and the task ends as its last worker did.
    const total = await call(client, 'start_managed_task', {
      taskKey: 'total', command: 'echo once; exit 3', restart: 'on-failure', maxRestarts: 2, minUptimeMs: 0, waitMs: 30000,
    });
    assert.equal(total.structuredContent.state, 'failed');
    assert.equal(total.structuredContent.restarts, 2);
    assert.equal(total.structuredContent.exitCode, 3);
    // graceMs: a worker that ignores SIGTERM is killed after the grace.
    const g = await call(client, 'start_managed_task', {
      taskKey: 'stubborn', command: ['sh', '-c', 'trap "" TERM; echo up; while :; do sleep 0.1; done'], graceMs: 300, untilPattern: 'up', waitMs: 20000,
    });
    assert.equal(g.structuredContent.state, 'running');
    const rec = JSON.parse(readFileSync(join(store.dir, 'tasks', g.structuredContent.taskId, 'record.json'), 'utf8'));
    assert.equal(rec.restart.graceMs, 300);
    const c = await call(client, 'cancel_managed_task', { taskKey: 'stubborn' });
    assert.equal(c.structuredContent.state, 'cancelled');
    assert.equal(c.structuredContent.signal, 9);
  });
  test('cwd defaults to the client\'s first root, else the server\'s; the answer says which', async (t) => {
    const store = makeStore(t);
    const { client } = await store.connect({ roots: [{ uri: `file://${store.dir}`, name: 'store' }] });
    const a = await call(client, 'start_managed_task', { taskKey: 'rooted', command: 'pwd', waitMs: 20000 });
    assert.equal(a.structuredContent.cwd, store.dir);
    assert.equal(a.structuredContent.cwdFrom, 'root');
    assert.deepEqual(a.structuredContent.tail, [store.dir]);
    const plain = await store.connect();
    const b = await call(plain.client, 'start_managed_task', { taskKey: 'unrooted', command: 'pwd', waitMs: 20000 });
    assert.equal(b.structuredContent.cwdFrom, 'server');
    assert.equal(b.structuredContent.cwd, process.cwd(), 'the server runs in the test\'s directory');
    const list = await call(plain.client, 'list_managed_tasks', {});
    assert.ok(list.structuredContent.tasks.every((x) => typeof x.cwd === 'string'), 'the list reports the cwd too');
  });

  test('prompts and completion are served as declared', async (t) => {
    const store = makeStore(t);
    const { client } = await store.connect();
    const caps = client.getServerCapabilities();
    assert.ok(caps.prompts && caps.completions && caps.logging);
    const s = await call(client, 'start_managed_task', { taskKey: 'broken', command: 'echo "error: no such file"; exit 2', waitMs: 20000 });
    const { prompts } = await client.listPrompts();
    assert.deepEqual(prompts.map((p) => p.name), ['diagnose_task']);
    const p = await client.getPrompt({ name: 'diagnose_task', arguments: { task: 'broken' } });
    assert.match(p.messages[0].content.text, /error: no such file/);
    await assert.rejects(client.getPrompt({ name: 'nope' }), (e) => e.code === -32602);
    const c = await client.complete({ ref: { type: 'ref/prompt', name: 'diagnose_task' }, argument: { name: 'task', value: 'bro' } });
    assert.deepEqual(c.completion.values, ['broken']);
    const c2 = await client.complete({ ref: { type: 'ref/resource', uri: 'taskfs://tasks/{taskId}/record' }, argument: { name: 'taskId', value: s.structuredContent.taskId.slice(0, 4) } });
    assert.ok(c2.completion.values.includes(s.structuredContent.taskId));
  });
}
