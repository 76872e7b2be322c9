// The web viewer in a real browser: Debian's chromium, headless, driven by
// playwright-core, against a real `taskfs serve` on a private store, with
// tasks started by `taskfs run` on the same store. Skipped (saying why)
// only when chromium is absent.
//
// UPDATE_SCREENSHOT=1 also copies the list's screenshot to
// docs/viewer-list-light.png (the README's).
import test from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHROMIUM, haveChromium, openViewer, outPath, run, taskfs } from './browser.mjs';

const skip = haveChromium ? false : `${CHROMIUM} is absent: install Debian's chromium to run the viewer's browser tests`;

// Polls get() until ok(value) holds; fails with what it saw last.
// The bound guards against a hang, sized for a busy machine (tests/README.md).
async function until(what, get, ok, timeout = 120000) {
  const end = Date.now() + timeout;
  let last;
  for (;;) {
    last = await get();
    if (ok(last)) return last;
    if (Date.now() > end) assert.fail(`${what}: still ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const waitEnd = (dir, id) => {
  try {
    taskfs(dir, 'wait', id);
  } catch { /* a task that fails ends with its code */ }
};

// Issue 26.1: the login URL's fragment carries the token; the page keeps it
// in sessionStorage, drops it from the address bar and sends it as a
// header. No cookie is set, ever, and one would open nothing.
test('the fragment logs in, the token leaves the address bar, no cookie is set', { skip }, async (t) => {
  const v = await openViewer(t);
  const { dir, page, context } = v;
  const id = run(dir, ['sh', '-c', 'echo hello from the fragment'], ['--key', 'frag']);
  waitEnd(dir, id);
  const seen = [];
  page.on('request', (r) => seen.push(r));
  await page.goto(v.loginUrl);
  await page.waitForURL(`${v.srv.url}/`);
  await page.locator(`#rows tr[data-id="${id}"]`).waitFor();
  assert.ok(!page.url().includes(v.srv.token), `the token is still in the address bar: ${page.url()}`);
  assert.equal(await page.evaluate(() => sessionStorage.getItem('taskfs.token')), v.srv.token);
  for (const r of seen) assert.ok(!r.url().includes(v.srv.token), `the token went out in a URL: ${r.url()}`);
  const api = seen.filter((r) => new URL(r.url()).pathname.startsWith('/api/'));
  assert.ok(api.some((r) => new URL(r.url()).pathname === '/api/events'), 'the events stream was opened');
  for (const r of api) assert.equal(await r.headerValue('authorization'), `Bearer ${v.srv.token}`, r.url());
  assert.deepEqual(await context.cookies(), [], 'no cookie');
  assert.deepEqual(v.cookies, [], 'no Set-Cookie');
  // The ?token= form logs in once too, and leaves the bar as well.
  const p2 = await (await v.browser.newContext()).newPage();
  await p2.goto(`${v.srv.url}/?token=${v.srv.token}`);
  await p2.locator(`#rows tr[data-id="${id}"]`).waitFor();
  assert.ok(!p2.url().includes(v.srv.token), p2.url());
  // Without the token the page says how to log in.
  const p3 = await (await v.browser.newContext()).newPage();
  await p3.goto(`${v.srv.url}/`);
  await until('the 401 text', () => p3.locator('#list-error').textContent(), (s) => s.includes('login URL'));
  // A cookie holding the token opens nothing, even from the page itself.
  const status = await p3.evaluate(async (tok) => {
    document.cookie = `taskfs_token=${tok}; path=/`;
    return (await fetch('/api/tasks', { credentials: 'include' })).status;
  }, v.srv.token);
  assert.equal(status, 401);
  assert.deepEqual(v.problems, []);
});

test('the list goes live, a task streams its lines, Cancel ends it cancelled', { skip }, async (t) => {
  const v = await openViewer(t);
  const { dir, page } = v;
  // A few tasks in the states a list shows.
  const done = run(dir, ['sh', '-c', 'echo building the docs; echo done'], ['--key', 'docs']);
  const failed = run(dir, ['sh', '-c', 'echo compiling; echo "error: undefined reference to main" >&2; exit 2'], ['--key', 'link']);
  const stopped = run(dir, ['sleep', '600'], ['--key', 'dev-server']);
  taskfs(dir, 'cancel', '--wait', stopped);
  const later = run(dir, ['make', 'release'], ['--key', 'release', '--delay', '1h']);
  waitEnd(dir, done);
  waitEnd(dir, failed);

  await page.goto(v.loginUrl);
  await page.waitForURL(`${v.srv.url}/`);
  for (const id of [done, failed, stopped, later]) await page.locator(`#rows tr[data-id="${id}"]`).waitFor();
  assert.equal(await page.locator(`#rows tr[data-id="${failed}"] .c-state`).textContent(), 'failed');
  assert.equal(await page.locator(`#rows tr[data-id="${failed}"] .c-exit`).textContent(), '2');
  assert.equal(await page.locator(`#rows tr[data-id="${later}"] .c-state`).textContent(), 'queued');

  // A task that writes slowly, in colour, appears running without a reload.
  // It writes until the test cancels it: 900 lines 0.2 s apart ended after
  // 3 minutes, which a slow machine's browser could take to get to Cancel.
  const script = 'i=0; while :; do i=$((i+1)); ' +
    'printf "\\033[1;32mok\\033[0m step %d \\033[38;5;208mof\\033[0m 900\\n" $i; sleep 0.2; done';
  const slow = run(dir, ['sh', '-c', script], ['--key', 'slow-printer']);
  const row = page.locator(`#rows tr[data-id="${slow}"]`);
  await row.waitFor();
  await until('the new task in the list', () => row.locator('.c-state').textContent(), (s) => s === 'running');
  assert.equal(await page.locator('#rows tr').first().getAttribute('data-id'), slow, 'the newest task is on top');
  await until('its duration', () => row.locator('.c-dur').textContent(), (s) => /^[1-9]\d*s$/.test(s));
  const shot = outPath('viewer-list-light.png');
  const box = await page.locator('table.tasks').boundingBox();
  await page.screenshot({ path: shot, clip: { x: 0, y: 0, width: 1280, height: Math.ceil(box.y + box.height + 16) } });
  await page.emulateMedia({ colorScheme: 'dark' });
  assert.equal(await page.evaluate(() => getComputedStyle(document.body).backgroundColor), 'rgb(13, 17, 23)', 'the dark theme');
  await page.screenshot({ path: outPath('viewer-list-dark.png') });
  await page.emulateMedia({ colorScheme: 'light' });
  if (process.env.UPDATE_SCREENSHOT === '1') copyFileSync(shot, join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '../../docs/viewer-list-light.png'));

  // The keyboard opens it: its lines arrive as they are written.
  await row.focus();
  await page.keyboard.press('Enter');
  await page.locator('#task-view').waitFor();
  assert.equal(await page.locator('#t-title').textContent(), slow);
  const lines = page.locator('#transcript .ln');
  const n1 = await until('lines in the transcript', () => lines.count(), (n) => n >= 3);
  await until('more lines, live', () => lines.count(), (n) => n > n1 + 2);
  const last = await lines.last().textContent();
  assert.match(last, /^ok step \d+ of 900$/);
  assert.equal(await lines.first().getAttribute('data-n'), '1');
  assert.ok(await page.locator('#transcript .ln span.f2.bo').count(), 'bold green is rendered');
  assert.equal(await page.locator('#transcript .ln span.f2.bo').first().textContent(), 'ok');
  assert.match(await page.locator('#transcript .ln span[style]').first().getAttribute('style'), /rgb\(255, ?135, ?0\)/);
  assert.ok(!(await page.locator('#transcript').textContent()).includes('\x1b'), 'no escape is left as text');
  await page.screenshot({ path: outPath('viewer-task-running.png') });

  // Cancel asks first; Keep it running changes nothing.
  await page.click('#cancel');
  assert.ok(await page.locator('#confirm').isVisible());
  await page.click('#c-no');
  assert.ok(!(await page.locator('#confirm').isVisible()));
  assert.equal(await page.locator('#t-state').textContent(), 'running');
  await page.click('#cancel');
  await page.click('#c-yes');
  await until('the state after Cancel', () => page.locator('#t-state').textContent(), (s) => s === 'cancelled');
  await until('the follow stream ends', () => page.locator('#t-tinfo').textContent(), (s) => !s.includes('following'));
  assert.equal(JSON.parse(taskfs(dir, 'show', slow)).state, 'cancelled');
  await page.screenshot({ path: outPath('viewer-task-cancelled.png') });

  // Escape goes back to the list, where the row has moved on too.
  await page.keyboard.press('Escape');
  await page.locator('#list-view').waitFor();
  await until('the row after Cancel', () => row.locator('.c-state').textContent(), (s) => s === 'cancelled');
  assert.equal(await page.evaluate(() => document.activeElement?.dataset?.id), slow, 'focus is back on its row');

  // Filtering by state asks the server for those states only.
  await page.check('#filter input[value="failed"]');
  await until('the failed filter', () => page.locator('#rows tr').count(), (n) => n === 1);
  assert.equal(await page.locator('#rows tr').first().getAttribute('data-id'), failed);
  await page.uncheck('#filter input[value="failed"]');
  await until('no filter', () => page.locator('#rows tr').count(), (n) => n === 5);

  assert.deepEqual(v.problems, []);
  assert.deepEqual(v.cookies, [], 'no Set-Cookie');
});

// Issue 27.2: the record panel and the list's line count follow a running
// task's progress (the progress events of /api/events), before it ends.
// The task goes on in stages, each waiting for a file the test makes, so
// every count it checks is one the task really stops at.
test('a running task\'s line count and important lines grow live, in the list and its record', { skip }, async (t) => {
  const v = await openViewer(t);
  const { dir, page } = v;
  const gates = mkdtempSync(join(tmpdir(), 'taskfs-web-gates-'));
  t.after(() => rmSync(gates, { recursive: true, force: true }));
  const wait = (name) => `while [ ! -e '${gates}/${name}' ]; do sleep 0.05; done`;
  const id = run(dir, ['sh', '-c', `seq 1 3; ${wait('go1')}; seq 4 9; echo "error: ten"; ${wait('go2')}; ` +
    `seq 11 15; echo "error: sixteen"; ${wait('go3')}`]);
  const go = (name) => writeFileSync(join(gates, name), '');

  await page.goto(v.loginUrl);
  await page.waitForURL(`${v.srv.url}/`);
  const row = page.locator(`#rows tr[data-id="${id}"]`);
  await row.waitFor();
  await until('3 lines in the list', () => row.locator('.c-lines').textContent(), (s) => s === '3');
  go('go1');
  await until('10 lines in the list', () => row.locator('.c-lines').textContent(), (s) => s === '10');
  assert.equal(await row.locator('.c-state').textContent(), 'running');

  await page.evaluate((x) => { location.hash = `#/task/${x}`; }, id);
  await page.locator('#task-view').waitFor();
  const field = (name) => page.evaluate((n) => {
    const dt = [...document.querySelectorAll('#t-fields dt')].find((d) => d.textContent === n);
    return dt ? dt.nextElementSibling.textContent : '';
  }, name);
  const important = () => page.locator('#t-important li .text').allTextContents();
  await until('the record panel at 10 lines', () => field('transcript'), (s) => s.startsWith('10 lines'));
  assert.deepEqual(await important(), ['error: ten']);
  go('go2');
  await until('the record panel at 16 lines', () => field('transcript'), (s) => s.startsWith('16 lines'));
  await until('the new important line', important, (l) => l.includes('error: sixteen'));
  assert.equal(await page.locator('#t-state').textContent(), 'running', 'all of it before the end');
  assert.equal(JSON.parse(taskfs(dir, 'show', id)).state, 'running');
  go('go3');
  await until('the end', () => page.locator('#t-state').textContent(), (s) => s === 'completed');
  assert.match(await field('transcript'), /^16 lines/);
  assert.deepEqual(v.problems, []);
});

test('a 50 MB transcript opens at its last line, pages back on scroll, jumps to an important line', { skip }, async (t) => {
  const v = await openViewer(t);
  const { dir, page } = v;
  const N = 650000; // lines of ~80 bytes: about 52 MB
  const id = run(dir, ['sh', '-c', `echo "error: boom, an important line at the start"; ` +
    `seq -f 'line %.0f \u00fc\u2713 ${'x'.repeat(60)}' 1 ${N}`]);
  waitEnd(dir, id);
  const rec = JSON.parse(taskfs(dir, 'show', id));
  assert.ok(rec.transcript.bytes > 50e6, `transcript of ${rec.transcript.bytes} bytes`);

  await page.goto(v.loginUrl);
  await page.waitForURL(`${v.srv.url}/`);
  await page.evaluate((x) => { location.hash = `#/task/${x}`; }, id);
  const lines = page.locator('#transcript .ln');
  await until('the last line', () => lines.last().textContent().catch(() => ''), (s) => s.startsWith(`line ${N} `));
  await until('the last line numbered', () => lines.last().getAttribute('data-n'), (n) => n === String(N + 1));
  const firstN = Number(await until('numbered lines', () => lines.first().getAttribute('data-n'), (n) => n != null));
  assert.ok(firstN > 1000, `only the tail is read (first line shown ${firstN})`);

  // Scrolling to the top reads the part before, twice, keeping the numbers right.
  let top = firstN;
  for (let i = 0; i < 2; i++) {
    await page.locator('#transcript').evaluate((b) => { b.scrollTop = 0; });
    top = await until('earlier lines', async () => Number(await lines.first().getAttribute('data-n')), (n) => n < top);
  }
  const sample = await page.locator('#transcript').evaluate((b) => [...b.children].filter((_, i) => i % 997 === 0).map((d) => [d.dataset.n, d.textContent]));
  for (const [n, text] of sample) assert.ok(text.startsWith(`line ${Number(n) - 1} \u00fc\u2713 x`), `line ${n}: ${text}`);
  assert.ok(!(await page.locator('#transcript').textContent()).includes('\ufffd'), 'no character is cut at a chunk edge');
  await page.screenshot({ path: outPath('viewer-big-transcript.png') });

  // The important line links to line 1, far before what is loaded.
  await page.click('#t-important a[href$="/L1"]');
  await until('the line linked', () => page.locator('#transcript .ln.hit').textContent().catch(() => ''), (s) => s.startsWith('error: boom'));
  assert.equal(await page.locator('#transcript .ln.hit').getAttribute('data-n'), '1');
  assert.ok(await page.locator('#t-tail').isVisible());
  await page.click('#t-tail');
  await until('the end again', () => lines.last().textContent().catch(() => ''), (s) => s.startsWith(`line ${N} `));

  assert.deepEqual(v.problems, []);
});
