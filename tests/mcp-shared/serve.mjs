// `taskfs serve` for the MCP tests over HTTP: one server per connection
// (as over stdio, where each connect starts a `taskfs mcp`), in the
// foreground on a port the kernel picks, its token read from the store.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

// The bound of the waits below: a guard against a server that never
// says what is awaited, never a verdict on speed, so sized for an ASan
// build beside a busy core (tests/README.md).
export const SERVE_WAIT_MS = 120000;

// Starts `taskfs serve --foreground` on dir; resolves once it listens:
// { url, mcpUrl, token, pid, proc, stderr(), waitStderr(re), stop() }.
export function startServe(bin, dir, env, extraArgs = []) {
  const proc = spawn(bin, ['serve', '--foreground', '--listen', '127.0.0.1:0', '--state-dir', dir, ...extraArgs],
    { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let stdout = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  // Resolves once the server's stderr matches re: checked at each write
  // of the server (an event, not a poll); rejects after ms with what it
  // did write.
  const waitStderr = (re, ms = SERVE_WAIT_MS) => new Promise((resolve, reject) => {
    const check = () => {
      if (!re.test(stderr)) return;
      clearTimeout(timer);
      proc.stderr.off('data', check);
      resolve(stderr);
    };
    const timer = setTimeout(() => {
      proc.stderr.off('data', check);
      reject(new Error(`taskfs serve did not write ${re} in ${ms} ms; its stderr:\n${stderr}`));
    }, ms);
    proc.stderr.on('data', check);
    check();
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL'); // not left behind by a test that gives up on it
      reject(new Error(`taskfs serve did not come up: ${stderr}`));
    }, SERVE_WAIT_MS);
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`taskfs serve exited ${code}: ${stderr}`)); });
    proc.stdout.on('data', (d) => {
      stdout += d;
      const m = stdout.match(/on (http:\/\/127\.0\.0\.1:\d+) \(pid (\d+)\)/);
      if (!m || !stdout.includes('log in:')) return;
      clearTimeout(timer);
      proc.removeAllListeners('exit');
      const token = readFileSync(join(dir, 'serve.token'), 'utf8').trim();
      const exited = new Promise((r) => proc.on('exit', r));
      resolve({
        url: m[1], mcpUrl: new URL(`${m[1]}/mcp`), token, pid: Number(m[2]), proc,
        stderr: () => stderr,
        waitStderr,
        headers: { Authorization: `Bearer ${token}` },
        async stop() {
          if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
          await exited;
        },
      });
    });
  });
}
