// The failure corpus (tests/corpus/, see its README) through the real MCP
// server, as an agent meets it: each case's task prints the tool's output,
// then 60,000 lines of the progress noise that buries it in a long run, and
// exits with the tool's exit code. Once the task has ended, one
// read_managed_task with the defaults must hold every `expect` line of the
// case (the line an agent needs to diagnose the failure) and stay within
// 4096 bytes.
//
// On by default; TASKFS_CORPUS=0 skips it. TASKFS_CORPUS_JOBS sets how many
// cases run at once (default 4). TASKFS_CORPUS_CASES=a,b runs only those.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeStore, call, sleep } from './helpers.mjs';

// import.meta.dirname only from Node 20.11; Debian 12's Node is 18.
const CORPUS = resolve(dirname(fileURLToPath(import.meta.url)), '../corpus');
const NOISE_LINES = 60000;
const MAX_BYTES = 4096;
const JOBS = Number(process.env.TASKFS_CORPUS_JOBS ?? 4);
const only = process.env.TASKFS_CORPUS_CASES?.split(',').filter(Boolean);

function readLines(path) {
  return existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter((l) => l.length) : [];
}

function loadCases() {
  return readdirSync(CORPUS, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(CORPUS, d.name, 'expect')))
    .map((d) => d.name)
    .filter((name) => !only || only.includes(name))
    .sort()
    .map((name) => {
      const dir = join(CORPUS, name);
      return {
        name,
        output: join(dir, 'output'),
        exit: Number(readFileSync(join(dir, 'exit'), 'utf8').trim()),
        expect: readLines(join(dir, 'expect')),
        noise: readLines(join(dir, 'noise'))[0] ?? 'build',
      };
    });
}

// Every string in the answer (important lines, tail, reason...), one per
// line: what an agent reads, with the JSON escaping undone.
// The task's own command line and cwd are left out: they name the case.
function strings(v, out = []) {
  if (typeof v === 'string') out.push(v);
  else if (Array.isArray(v)) for (const x of v) strings(x, out);
  else if (v && typeof v === 'object')
    for (const [k, x] of Object.entries(v)) if (k !== 'command' && k !== 'cwd') strings(x, out);
  return out;
}

const cases = existsSync(CORPUS) ? loadCases() : [];
const skip = process.env.TASKFS_CORPUS === '0' ? 'TASKFS_CORPUS=0' : cases.length === 0 ? 'no corpus' : false;

describe('failure corpus: the default answer diagnoses the failure', { concurrency: JOBS, skip }, () => {
  const cleanups = [];
  const sizes = [];
  const missed = [];
  let firstSeen = 0;
  let client;

  before(async () => {
    const store = makeStore({ after: (fn) => cleanups.push(fn) });
    ({ client } = await store.connect());
  });

  after(async () => {
    for (const fn of cleanups) await fn();
    if (!sizes.length) return;
    sizes.sort((a, b) => a - b);
    console.log(`# corpus: ${cases.length - missed.length}/${cases.length} cases diagnosable ` +
      `(first expected line in the answer: ${firstSeen}/${cases.length}); ` +
      `answer bytes median ${sizes[sizes.length >> 1]}, largest ${sizes.at(-1)}`);
    for (const m of missed) console.log(`# corpus: ${m}`);
  });

  for (const c of cases) {
    it(c.name, async (t) => {
      const script = 'cat "$1"; sh "$2" "$3" "$4"; exit "$5"';
      const started = await call(client, 'start_managed_task', {
        taskKey: `corpus-${c.name}`,
        command: ['sh', '-c', script, 'corpus', c.output, join(CORPUS, 'noise.sh'), c.noise,
          String(NOISE_LINES), String(c.exit)],
        waitMs: 0,
      });
      const taskId = started.structuredContent?.taskId;
      assert.ok(taskId, `start_managed_task failed: ${JSON.stringify(started)}`);
      for (;;) {
        const r = await call(client, 'read_managed_task', { taskId, waitMs: 50000, tailLines: 0 });
        if (!['queued', 'running'].includes(r.structuredContent?.state)) break;
        await sleep(10);
      }

      const answer = await call(client, 'read_managed_task', { taskId });
      const s = answer.structuredContent;
      assert.equal(s.exitCode, c.exit, `exit code of the task: ${s.reason}`);
      assert.ok(s.lines > NOISE_LINES, `the task printed ${s.lines} lines`);
      const size = Buffer.byteLength(JSON.stringify(answer));
      sizes.push(size);
      t.diagnostic(`answer ${size} bytes, important total ${s.important.total}`);
      const seen = strings(JSON.parse(answer.content[0].text)).join('\n');
      const absent = c.expect.filter((e) => !seen.includes(e));
      if (seen.includes(c.expect[0])) firstSeen++;
      if (absent.length) missed.push(`${c.name}: missing ${absent.map((e) => JSON.stringify(e)).join(', ')}`);
      assert.ok(size <= MAX_BYTES, `answer is ${size} bytes, over ${MAX_BYTES}`);
      assert.deepEqual(absent, [], `not in the default answer; it held:\n` +
        [...s.important.first, ...s.important.last].map((l) => `  ${l.line} ${l.kind} ${l.text}`).join('\n'));
    });
  }
});
