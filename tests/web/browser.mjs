// What the web viewer's browser tests (and bench/web_paint.mjs) share: a
// temporary store served by a real `taskfs serve`, tasks started on it by
// `taskfs run` as a person would, and Debian's chromium driven headless by
// playwright-core, with every console error, page error, failed request
// and error answer of the page collected.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServe } from '../mcp-shared/serve.mjs';
import { endProcs } from '../mcp-shared/store.mjs';

const here = dirname(fileURLToPath(import.meta.url));
export const TASKFS_BIN = resolve(process.env.TASKFS_BIN ?? join(here, '../../build/taskfs'));
export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
export const OUT = resolve(process.env.WEB_TEST_OUT ?? join(here, 'out'));
export const haveChromium = existsSync(CHROMIUM);

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function taskfs(dir, ...args) {
  return execFileSync(TASKFS_BIN, [...args, '--state-dir', dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

// Starts CMD as a task on dir; returns its id.
export function run(dir, argv, opts = []) {
  return execFileSync(TASKFS_BIN, ['run', '--state-dir', dir, ...opts, '--', ...argv], { encoding: 'utf8' }).trim();
}

// A fresh store, a server on it and a browser; all of it undone at the end
// of test t (every task still running cancelled), even when t fails.
export async function openViewer(t, { colorScheme = 'light', viewport = { width: 1280, height: 800 }, prefix = 'taskfs-web-test-', dir } = {}) {
  const { chromium } = await import('playwright-core');
  const store = dir ?? mkdtempSync(join(tmpdir(), prefix));
  const env = { ...process.env };
  const srv = await startServe(TASKFS_BIN, store, env);
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true });
  const context = await browser.newContext({ colorScheme, viewport });
  const page = await context.newPage();
  const problems = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => {
    // An event stream the page itself closed (leaving a task's page) ends
    // as aborted; that is not a failure.
    const aborted = r.failure()?.errorText === 'net::ERR_ABORTED';
    if (!(aborted && /\/api\/(events|tasks\/[^/]+\/transcript\?follow=1)/.test(r.url())))
      problems.push(`request failed: ${r.method()} ${r.url()}: ${r.failure()?.errorText}`);
  });
  const cookies = [];
  page.on('response', async (r) => {
    if (r.status() >= 400) problems.push(`answer ${r.status()}: ${r.request().method()} ${r.url()}`);
    const set = await r.headerValue('set-cookie').catch(() => null);
    if (set) cookies.push(`${r.url()}: ${set}`);
  });
  t.after(async () => {
    await browser.close().catch(() => {});
    try {
      for (const state of ['running', 'queued', 'paused'])
        for (const rec of JSON.parse(taskfs(store, 'ls', '--json', '--state', state) || '[]'))
          taskfs(store, 'cancel', '--wait', rec.id);
    } catch { /* best effort */ }
    await srv.stop();
    await endProcs(store);
    if (!dir) rmSync(store, { recursive: true, force: true });
  });
  return {
    dir: store, srv, browser, context, page, problems, cookies,
    // The login URL `taskfs serve` prints: the token in the fragment,
    // which the browser sends to no server.
    loginUrl: `${srv.url}/#token=${srv.token}`,
  };
}

export function outPath(name) {
  mkdirSync(OUT, { recursive: true });
  return join(OUT, name);
}
