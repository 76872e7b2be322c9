// `taskfs serve` for the MCP tests over HTTP: one server per connection
// (as over stdio, where each connect starts a `taskfs mcp`), in the
// foreground on a port the kernel picks, its token read from the store.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

// Starts `taskfs serve --foreground` on dir; resolves once it listens:
// { url, mcpUrl, token, pid, proc, stderr(), stop() }.
export function startServe(bin, dir, env, extraArgs = []) {
  const proc = spawn(bin, ['serve', '--foreground', '--listen', '127.0.0.1:0', '--state-dir', dir, ...extraArgs],
    { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let stdout = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`taskfs serve did not come up: ${stderr}`)), 20000);
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
        headers: { Authorization: `Bearer ${token}` },
        async stop() {
          if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
          await exited;
        },
      });
    });
  });
}
