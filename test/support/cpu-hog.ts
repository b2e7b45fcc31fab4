import { spawn } from 'node:child_process';

/** A hog never outlives this, whatever happens to the process that started it. */
const HARD_CAP_MS = 60 * 60_000;

export interface CpuHog {
  stop(): void;
}

/**
 * Keeps one core busy, as another program on a developer's machine would: a child process spinning
 * at normal priority, so it competes with the broker, the databases and the workers for the CPU.
 * It stops on `stop()`, when the process that started it is gone (it checks every second), and
 * after `maxMs` at the latest.
 */
export function startCpuHog(maxMs = HARD_CAP_MS): CpuHog {
  const spin = `
    const parent = ${process.pid};
    const end = Date.now() + ${Math.min(maxMs, HARD_CAP_MS)};
    for (let checked = Date.now(); Date.now() < end; ) {
      if (Date.now() - checked >= 1000) {
        checked = Date.now();
        try { process.kill(parent, 0); } catch { break; }
      }
    }`;
  const child = spawn(process.execPath, ['-e', spin], { stdio: 'ignore' });
  child.unref();
  return { stop: () => void child.kill('SIGKILL') };
}
