// Time to first paint of the web viewer (issue 17), in Debian's chromium
// (headless, through tests/web's playwright-core and its helpers), on a real
// `taskfs serve`:
//
//   - the list, on a store of 10,000 tasks (build/bench/tfsgen fill);
//   - the page of a task whose transcript is 1 GiB (made by a real task
//     through its supervisor: seq into the transcript).
//
// "First paint" is the page's own mark (app.js markPaint: the frame after
// the first page of the list, or the transcript's tail, was put in the
// page), read from performance.getEntriesByName, in ms since the
// navigation started; each figure is a fresh load of the page (the login
// token already in the tab's sessionStorage), RUNS times, median and range printed.
//
//   make build/taskfs build/bench/tfsgen
//   (cd tests/web && npm ci) && node bench/web_paint.mjs [RUNS] [GIB]
//
// Not a test: it never fails on a timing, only on a broken page.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { haveChromium, CHROMIUM, openViewer, run, taskfs } from '../tests/web/browser.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const BUILD = resolve(process.env.BUILD ?? join(here, '../build'));
const RUNS = Number(process.argv[2] ?? 5);
const GIB = Number(process.argv[3] ?? 1);

if (!haveChromium) {
  console.error(`web_paint.mjs: ${CHROMIUM} is absent`);
  process.exit(1);
}

function stats(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return { median: s[Math.floor(s.length / 2)], min: s[0], max: s[s.length - 1], runs: s.length };
}

// Loads url, then reloads it, RUNS loads in all; each time, waits for the mark and for ready()
// to hold, and returns the mark's times.
async function measure(page, url, mark, ready) {
  const times = [];
  for (let i = 0; i < RUNS; i++) {
    if (i === 0) await page.goto(url);
    else await page.reload();
    await page.waitForFunction((m) => performance.getEntriesByName(m).length > 0, mark, { timeout: 120000 });
    await page.waitForFunction(ready, null, { timeout: 120000 });
    times.push(await page.evaluate((m) => performance.getEntriesByName(m)[0].startTime, mark));
  }
  return stats(times.map((x) => Math.round(x)));
}

// Problems of the page, less the requests each fresh load aborts of the
// page before it.
const broken = (v) => v.problems.filter((p) => !/^request failed: .*net::ERR_ABORTED$/.test(p));

async function withViewer(dir, fn) {
  const cleanups = [];
  try {
    const v = await openViewer({ after: (f) => cleanups.push(f) }, { dir });
    await v.page.goto(v.loginUrl);
    await v.page.waitForURL(`${v.srv.url}/`);
    return await fn(v);
  } finally {
    for (const f of cleanups) await f();
  }
}

const out = { chromium: execFileSync(CHROMIUM, ['--version'], { encoding: 'utf8' }).trim() };

// The list at 10,000 tasks.
{
  const dir = mkdtempSync(join(tmpdir(), 'taskfs-web-paint-'));
  try {
    const n = execFileSync(join(BUILD, 'bench/tfsgen'), ['fill', dir, '9999'], { encoding: 'utf8' }).trim();
    out.list = await withViewer(dir, async (v) => {
      const r = await measure(v.page, `${v.srv.url}/`, 'taskfs:list', () => document.querySelectorAll('#rows tr').length > 0);
      r.tasks = Number(n);
      r.rowsShown = await v.page.locator('#rows tr').count();
      if (broken(v).length) throw new Error(broken(v).join('\n'));
      return r;
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// A task page with a 1 GiB transcript.
{
  const dir = mkdtempSync(join(tmpdir(), 'taskfs-web-paint-'));
  try {
    const lines = Math.ceil((GIB * 2 ** 30) / 80);
    const t0 = Date.now();
    const id = run(dir, ['sh', '-c', `echo "error: an important line at the start"; seq -f 'line %.0f ${'x'.repeat(66)}' 1 ${lines}`]);
    try {
      taskfs(dir, 'wait', id);
    } catch { /* reported below */ }
    const rec = JSON.parse(taskfs(dir, 'show', id));
    if (rec.state !== 'completed') throw new Error(`the generator task ended ${rec.state}: ${rec.reason}`);
    out.transcript = await withViewer(dir, async (v) => {
      const r = await measure(v.page, `${v.srv.url}/#/task/${id}`, 'taskfs:transcript',
        () => document.querySelector('#transcript .ln:last-child')?.textContent.startsWith('line '));
      r.bytes = rec.transcript.bytes;
      r.madeInMs = Date.now() - t0;
      if (broken(v).length) throw new Error(broken(v).join('\n'));
      return r;
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log(JSON.stringify(out, null, 2));
console.log(`first paint, list of ${out.list.tasks} tasks: ${out.list.median} ms (median of ${out.list.runs}, ${out.list.min}-${out.list.max})`);
console.log(`first paint, task page of a ${(out.transcript.bytes / 2 ** 30).toFixed(2)} GiB transcript: ${out.transcript.median} ms (median of ${out.transcript.runs}, ${out.transcript.min}-${out.transcript.max})`);
