// A2A 1.0 on `taskfs serve`, driven by the official @a2a-js/sdk client
// over the JSON-RPC binding: the agent card, SendMessage (idempotent by
// message id, blocking and not), GetTask, ListTasks (pages, the status
// filter), SubscribeToTask (lines, then the end), CancelTask, and the
// errors the specification names for bad input.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { startServe } from '../mcp-shared/serve.mjs';
import { endProcs, serverEnvOf } from '../mcp-shared/store.mjs';

const TASKFS_BIN = resolve(process.env.TASKFS_BIN ?? '../../build/taskfs');
// The test programs of tests/tools/ (make test-web builds them).
const TOOLS = resolve(process.env.TASKFS_TEST_TOOLS ?? '../../build/tests/tools');
const env = serverEnvOf({ PATH: process.env.PATH, HOME: process.env.HOME });

// The SDK's enums as numbers (its internal form).
const ROLE_USER = 1;
const S = { SUBMITTED: 1, WORKING: 2, COMPLETED: 3, FAILED: 4, CANCELED: 5 };

// A store and a server of its own for test t, stopped and removed after
// it, every task left running cancelled first (even when the test fails).
async function setup(t, extraEnv = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'taskfs-a2a-'));
  const srv = await startServe(TASKFS_BIN, dir, { ...env, ...extraEnv });
  t.after(async () => {
    try {
      const tasks = JSON.parse(execFileSync(TASKFS_BIN, ['ls', '--json', '--state-dir', dir], { env }));
      for (const x of tasks)
        if (!['completed', 'failed', 'cancelled', 'lost'].includes(x.state))
          execFileSync(TASKFS_BIN, ['cancel', '--wait', '--state-dir', dir, x.id], { env });
    } catch { /* best effort */ }
    await srv.stop();
    await endProcs(dir);
    rmSync(dir, { recursive: true, force: true });
    // An ASan/UBSan build reports on its stderr (and at its exit: leaks).
    assert.doesNotMatch(srv.stderr(), /Sanitizer|runtime error/);
  });
  return { dir, srv, client: await clientOf(srv) };
}

// A client made from the card at srv.url; headers: more headers on every
// request (they override the client's own, as a wrong A2A-Version must).
async function clientOf(srv, headers = {}) {
  const fetchImpl = (url, init = {}) =>
    fetch(url, { ...init, headers: { ...(init.headers ?? {}), Authorization: `Bearer ${srv.token}`, ...headers } });
  const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
  }));
  return factory.createFromUrl(srv.url);
}

let seq = 0;
const messageId = () => `msg-${process.pid}-${Date.now()}-${seq++}`;

// SendMessage with a data part; wait: block until the task has ended.
function send(client, data, { id = messageId(), wait = false } = {}) {
  return client.sendMessage({
    message: { messageId: id, role: ROLE_USER, parts: [{ content: { $case: 'data', value: data } }] },
    configuration: { returnImmediately: !wait },
  });
}

const listAll = (client, params = {}) => client.listTasks({ status: 0, ...params });
const text = (artifact) => artifact.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');

async function rejectsWith(promise, code, re) {
  await assert.rejects(promise, (e) => {
    assert.equal(e.envelopeCode, code, `${e.name}: ${e.message}`);
    if (re) assert.match(e.message, re);
    return true;
  });
}

test('the agent card is public and names the JSON-RPC interface, the bearer scheme and the skill', async (t) => {
  const { srv, client } = await setup(t);
  const res = await fetch(`${srv.url}/.well-known/agent-card.json`);
  assert.equal(res.status, 200);
  const card = await res.json();
  assert.deepEqual(card.supportedInterfaces, [{ url: `${srv.url}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }]);
  assert.equal(card.securitySchemes.bearer.httpAuthSecurityScheme.scheme, 'Bearer');
  assert.deepEqual(card.securityRequirements, [{ schemes: { bearer: { list: [] } } }]);
  assert.equal(card.capabilities.streaming, true);
  assert.equal(card.capabilities.pushNotifications, false);
  assert.equal(card.skills[0].id, 'run-command');
  const seen = await client.getAgentCard();
  assert.equal(seen.name, 'taskfs');
  assert.equal(seen.skills[0].name, 'Run a command');
  // /a2a itself takes the token.
  const anon = await fetch(`${srv.url}/a2a`, { method: 'POST', headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' }, body: '{}' });
  assert.equal(anon.status, 401);
});

test('SendMessage starts a task once per message id; GetTask reads it; a blocking send returns its end', async (t) => {
  const { dir, client } = await setup(t);
  const id = messageId();
  const data = { command: ['sh', '-c', 'echo starting; echo "error: something broke"; sleep 0.5; echo done'], cwd: tmpdir() };
  const first = await send(client, data, { id });
  assert.ok(first.id);
  assert.ok([S.SUBMITTED, S.WORKING, S.COMPLETED].includes(first.status.state));
  assert.equal(first.metadata.taskfs.key, `a2a-${id}`);
  const again = await send(client, data, { id });
  assert.equal(again.id, first.id, 'a resent message finds the task it started');

  const done = await send(client, { command: ['sh', '-c', 'echo one; echo "error: two failed"; exit 3'] }, { wait: true });
  assert.equal(done.status.state, S.FAILED);
  assert.match(done.status.message.parts[0].content.value, /exit|code 3/);
  const tail = done.artifacts.find((a) => a.artifactId === 'tail');
  assert.equal(text(tail), 'one\nerror: two failed\n');
  const imp = done.artifacts.find((a) => a.artifactId === 'important');
  const lines = imp.parts.find((p) => p.content.$case === 'data').content.value.lines;
  assert.ok(lines.some((l) => l.line === 2 && /two failed/.test(l.text)), JSON.stringify(lines));

  // The task has core's default policies, as one started by `taskfs run`.
  const rec = JSON.parse(execFileSync(TASKFS_BIN, ['ls', '--json', '--state-dir', dir], { env })).find((x) => x.id === first.id);
  assert.equal(rec.restart.graceMs, 5000);
  assert.equal(rec.restart.minUptimeMs, 1000);
  assert.equal(rec.restart.maxRestarts, null);
  const got = await client.getTask({ id: first.id });
  assert.equal(got.id, first.id);
  assert.equal(got.contextId, first.id);
  assert.deepEqual(got.metadata.taskfs.command, data.command);
  // The same taskKey and command: the same task, whatever the message id.
  const k1 = await send(client, { command: ['true'], taskKey: 'the-key' }, { wait: true });
  const k2 = await send(client, { command: ['true'], taskKey: 'the-key' });
  assert.equal(k2.id, k1.id);
  assert.equal(k2.status.state, S.COMPLETED);
  // The same message id for another command is refused, not run.
  await rejectsWith(send(client, { command: ['false'] }, { id }), -32602, /already names task/);
});

test('ListTasks pages newest first and filters by state', async (t) => {
  const { client } = await setup(t);
  const ids = [];
  for (let i = 0; i < 5; i++) ids.push((await send(client, { command: ['true'] }, { wait: true })).id);
  const running = await send(client, { command: ['sleep', 'infinity'] });
  const seen = [];
  let token = '';
  let pages = 0;
  do {
    const page = await listAll(client, { pageSize: 2, pageToken: token });
    assert.ok(page.tasks.length <= 2);
    assert.equal(page.pageSize, 2);
    assert.equal(page.totalSize, 6);
    assert.ok(page.tasks.every((x) => x.artifacts.length === 0), 'no artifacts unless asked');
    seen.push(...page.tasks.map((x) => x.id));
    token = page.nextPageToken;
    pages++;
  } while (token && pages < 10);
  assert.deepEqual(seen, [running.id, ...ids.reverse()]);
  assert.equal(pages, 3);

  const working = await listAll(client, { status: S.WORKING });
  assert.deepEqual(working.tasks.map((x) => x.id), [running.id]);
  const completed = await listAll(client, { status: S.COMPLETED, includeArtifacts: true });
  assert.equal(completed.tasks.length, 5);
  assert.ok(completed.tasks.every((x) => x.artifacts.some((a) => a.artifactId === 'tail')));
  assert.equal((await listAll(client, { status: 7 /* REJECTED */ })).tasks.length, 0);
  // Every task is its own context.
  assert.deepEqual((await listAll(client, { contextId: running.id })).tasks.map((x) => x.id), [running.id]);
  assert.equal((await listAll(client, { contextId: running.id, status: S.COMPLETED })).tasks.length, 0);
  assert.equal((await listAll(client, { contextId: '../x' })).tasks.length, 0);
  await rejectsWith(listAll(client, { pageSize: 1000 }), -32602, /pageSize/);
  await rejectsWith(listAll(client, { pageToken: 'not-a-task' }), -32602, /is not a task id/);
  await rejectsWith(listAll(client, { pageToken: 'zzzzzzzz-zzzzzz' }), -32602, /names no task/);
});

test('SubscribeToTask streams the task, its new lines and its final status', async (t) => {
  const { dir, client } = await setup(t);
  // The task prints once the test has its first event (the file go).
  const go = join(dir, 'go');
  const task = await send(client, {
    command: ['sh', '-c', `while [ ! -e ${go} ]; do sleep 0.02; done; echo one; sleep 0.2; echo two; sleep 0.2; echo three`],
  });
  const events = [];
  for await (const ev of client.resubscribeTask({ id: task.id })) {
    if (!events.length) writeFileSync(go, '');
    events.push(ev.payload);
  }
  assert.equal(events[0].$case, 'task');
  assert.equal(events[0].value.id, task.id);
  const lines = events.filter((e) => e.$case === 'artifactUpdate').map((e) => text(e.value.artifact)).join('');
  assert.equal(lines, 'one\ntwo\nthree\n');
  const last = events.at(-1);
  assert.equal(last.$case, 'statusUpdate');
  assert.equal(last.value.status.state, S.COMPLETED);
  assert.equal(last.value.taskId, task.id);
  // An ended task has nothing to subscribe to.
  await assert.rejects(async () => { for await (const _ of client.resubscribeTask({ id: task.id })); },
    (e) => /-32004/.test(e.message) || e.envelopeCode === -32004);
});

test('CancelTask ends a running task canceled; a second cancel is not cancelable', async (t) => {
  const { client } = await setup(t);
  const task = await send(client, { command: ['sleep', 'infinity'] });
  const cancelled = await client.cancelTask({ id: task.id });
  assert.equal(cancelled.status.state, S.CANCELED);
  assert.equal((await client.getTask({ id: task.id })).metadata.taskfs.state, 'cancelled');
  await rejectsWith(client.cancelTask({ id: task.id }), -32002, /already ended/);
});

test('unknown tasks, bad commands and wrong versions get the errors the specification names', async (t) => {
  const { srv, client } = await setup(t);
  await rejectsWith(client.getTask({ id: 'mx00000-nope' }), -32001, /not found/);
  await rejectsWith(client.getTask({ id: '../../etc' }), -32001);
  await rejectsWith(client.cancelTask({ id: 'nope' }), -32001);
  await rejectsWith(send(client, { command: 'ls -l' }), -32602, /array of strings/);
  await rejectsWith(send(client, { command: [] }), -32602, /non-empty array/);
  await rejectsWith(send(client, { command: ['ls', 7] }), -32602, /command\[1\] must be a string/);
  await rejectsWith(send(client, { command: [''] }), -32602, /must name a program/);
  await rejectsWith(send(client, { command: ['echo', 'x'.repeat(1 << 20)] }), -32602, /command\[1\] is 1048576 bytes/);
  await rejectsWith(send(client, { command: ['true'], cwd: 'relative' }), -32602, /absolute/);
  await rejectsWith(send(client, { command: ['true'], bogus: 1 }), -32602, /unknown field 'bogus'/);
  assert.equal((await listAll(client)).tasks.length, 0, 'nothing was started by bad input');

  const old = await clientOf(srv, { 'A2A-Version': '0.3' });
  await rejectsWith(old.getTask({ id: 'x' }), -32009, /0\.3 is not supported/);
  const rpc = async (body, headers = { 'A2A-Version': '1.0' }) => {
    const res = await fetch(`${srv.url}/a2a`, {
      method: 'POST', body, headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${srv.token}`, ...headers },
    });
    return (await res.json()).error;
  };
  assert.equal((await rpc('{"jsonrpc":"2.0","id":1,"method":"ListTasks"}', {})).code, -32009, 'no version means 0.3');
  assert.equal((await rpc('{"jsonrpc":"2.0","id":1,"method":"ListTasks"}', { 'A2A-Version': '1.0.3' })), undefined, 'the patch is ignored');
  assert.equal((await rpc('{"jsonrpc":"2.0","id":1,')).code, -32700);
  assert.equal((await rpc('[]')).code, -32600);
  assert.equal((await rpc('{"jsonrpc":"1.0","id":1,"method":"GetTask"}')).code, -32600);
  assert.equal((await rpc('{"jsonrpc":"2.0","id":1,"method":"Nope"}')).code, -32601);
  assert.equal((await rpc('{"jsonrpc":"2.0","id":1,"method":"CreateTaskPushNotificationConfig","params":{}}')).code, -32003);
  assert.equal((await rpc('{"jsonrpc":"2.0","id":1,"method":"GetExtendedAgentCard"}')).code, -32004);
  // Still serving.
  assert.equal((await client.getAgentCard()).name, 'taskfs');
});

test('a subscription carries a 3 MiB line whole, and ends cleanly when the server stops', async (t) => {
  const { dir, srv, client } = await setup(t);
  const go = join(dir, 'go');
  const task = await send(client, {
    command: ['sh', '-c', `while [ ! -e ${go} ]; do sleep 0.02; done; head -c 3145728 /dev/zero | tr '\\0' x; echo; echo after; exec sleep 60`],
  });
  let got = '';
  let ended = false;
  for await (const ev of client.resubscribeTask({ id: task.id })) {
    if (ev.payload.$case === 'task') writeFileSync(go, '');
    if (ev.payload.$case === 'artifactUpdate') got += text(ev.payload.value.artifact);
    if (got.endsWith('after\n') && !ended) {
      ended = true;
      srv.proc.kill('SIGTERM'); // the stream must end, not hang until the grace is over
    }
  }
  assert.equal(got.length, 3145728 + 1 + 6);
  assert.equal(got, `${'x'.repeat(3145728)}\nafter\n`);
});

test('SendStreamingMessage answers with the task, its lines and its end', async (t) => {
  const { dir, client } = await setup(t);
  const go = join(dir, 'go');
  const events = [];
  const stream = client.sendMessageStream({
    message: {
      messageId: messageId(), role: ROLE_USER,
      parts: [{ content: { $case: 'data', value: { command: ['sh', '-c', `while [ ! -e ${go} ]; do sleep 0.02; done; echo streamed; exit 4`] } } }],
    },
  });
  for await (const ev of stream) {
    if (!events.length) writeFileSync(go, '');
    events.push(ev.payload ?? ev);
  }
  assert.equal(events[0].$case, 'task');
  const lines = events.filter((e) => e.$case === 'artifactUpdate').map((e) => text(e.value.artifact)).join('');
  assert.equal(lines, 'streamed\n');
  assert.equal(events.at(-1).$case, 'statusUpdate');
  assert.equal(events.at(-1).value.status.state, S.FAILED);
});

test('a subscriber that never reads is dropped; the server keeps serving', async (t) => {
  // The stall bound is the request timeout: 1.5 s here. The subscriber is
  // tests/tools/noread, a client with a 4 KiB receive buffer of its own
  // that never reads: the server meets back-pressure after a few KiB of
  // what the task prints, whatever the kernel's tcp_rmem would let a
  // socket with autotuning swallow. A subscription follows new lines, so
  // the task prints (1 MB every 50 ms) until the test has seen the drop
  // (its stop file), however late the subscription comes; a fixed amount
  // printed at once was all written before a subscription that came late
  // on a busy machine, which then saw nothing to stall on. The drop is
  // awaited as the server's report of it (an event; the bound only guards
  // against a hang).
  const { dir, srv, client } = await setup(t, { TASKFS_SERVE_TIMEOUT_MS: '1500' });
  const stop = join(dir, 'stop');
  const task = await send(client, { command: ['sh', '-c',
    `i=0; while [ ! -e ${stop} ] && [ $i -lt 2400 ]; do head -c 1000000 /dev/zero | tr '\\0' y | fold -w 1000; sleep 0.05; i=$((i+1)); done; exec sleep 600`] });
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SubscribeToTask', params: { id: task.id } });
  const port = new URL(srv.url).port;
  const noread = spawn(join(TOOLS, 'noread'), ['127.0.0.1', port], { stdio: ['pipe', 'pipe', 'inherit'] });
  t.after(() => noread.kill('SIGKILL'));
  noread.stdin.end(`POST /a2a HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${srv.token}\r\n` +
    `A2A-Version: 1.0\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
  await srv.waitStderr(/a client of \/a2a .*dropped/);
  writeFileSync(stop, '');
  const got = await client.getTask({ id: task.id });
  assert.equal(got.id, task.id);
  assert.equal((await client.getAgentCard()).name, 'taskfs');
});

test('a message with only text gets ContentTypeNotSupported: the card takes application/json', async (t) => {
  const { client } = await setup(t);
  const card = await client.getAgentCard();
  assert.deepEqual(card.defaultInputModes, ['application/json']);
  await rejectsWith(client.sendMessage({
    message: { messageId: messageId(), role: ROLE_USER, parts: [{ content: { $case: 'text', value: 'please run ls' } }] },
  }), -32005, /application\/json/);
  assert.equal((await listAll(client)).tasks.length, 0, 'nothing was started');
});

test('a stream goes on exactly where the tail artifact ended, and its last chunk says lastChunk', async (t) => {
  const { dir, client } = await setup(t);
  // The task has written a whole line and half of one when the stream
  // begins (ready), and the rest once the test has its first event (go).
  const ready = join(dir, 'ready');
  const go = join(dir, 'go');
  const task = await send(client, {
    command: ['sh', '-c', `echo first; printf par; touch ${ready}; while [ ! -e ${go} ]; do sleep 0.02; done; echo tial; echo last`],
  });
  const deadline = Date.now() + 30000;
  while (!existsSync(ready) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  const events = [];
  for await (const ev of client.resubscribeTask({ id: task.id })) {
    if (!events.length) writeFileSync(go, '');
    events.push(ev.payload);
  }
  assert.equal(events[0].$case, 'task');
  const tail = events[0].value.artifacts.find((a) => a.artifactId === 'tail');
  const chunks = events.filter((e) => e.$case === 'artifactUpdate').map((e) => e.value);
  const streamed = chunks.map((c) => text(c.artifact)).join('');
  assert.equal(text(tail), 'first\n', 'the tail holds whole lines');
  assert.equal(streamed, 'partial\nlast\n', 'the stream begins where the tail ended');
  assert.equal(text(tail) + streamed, readFileSync(join(dir, 'tasks', task.id, 'transcript'), 'utf8'));
  assert.ok(chunks.length >= 1);
  assert.equal(chunks.at(-1).lastChunk, true, 'the last chunk says so');
  for (const c of chunks.slice(0, -1)) assert.ok(!c.lastChunk);

  // Lines written all the while: none skipped, none repeated. The task
  // writes until the test has seen at least 3 of its lines streamed (the
  // file stop), not a fixed count: a subscription that came after its end
  // (a slow machine) would have been refused, and one that came before its
  // first line (a fast one) must still see lines arrive while it streams.
  const stop = join(dir, 'stop');
  const busy = await send(client, { command: ['sh', '-c', `i=0; while [ ! -e ${stop} ]; do i=$((i+1)); echo "line $i"; sleep 0.003; done`] });
  const got = [];
  let first = '';
  const lines = () => (first + got.join('')).split('\n').filter(Boolean);
  for await (const ev of client.resubscribeTask({ id: busy.id })) {
    if (ev.payload.$case === 'task') first = text(ev.payload.value.artifacts.find((a) => a.artifactId === 'tail'));
    if (ev.payload.$case === 'artifactUpdate') {
      got.push(text(ev.payload.value.artifact));
      if (got.length >= 2 && lines().length >= 3) writeFileSync(stop, '');
    }
  }
  const all = lines();
  assert.ok(got.length >= 2 && all.length >= 3, `${got.length} chunks, ${all.length} lines`);
  assert.deepEqual(all, Array.from({ length: all.length }, (_, i) => `line ${i + 1}`));
  assert.equal(all.join('\n') + '\n', readFileSync(join(dir, 'tasks', busy.id, 'transcript'), 'utf8'));
});
