import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** Set in the tests' environment while test/run.ts keeps a core busy (`npm run test:loaded`, CI). */
const RUNNING = 'PUSH_TEST_CPU_HOG_RUNNING';
const SCRIPT = fileURLToPath(new URL('./cpu-hog.mjs', import.meta.url));

export interface CpuHog {
  /** The busy loop's pid, or undefined when the run's own hog serves instead. */
  readonly pid: number | undefined;
  stop(): void;
}

/**
 * Keeps one core busy (test/support/cpu-hog.mjs) until `stop()`, for at most `maxMs`, and never
 * past the life of this process. A test that must hold on a busy machine starts one; where the test
 * run already spins a core for every test (test/run.ts), it does not start a second.
 */
export function startCpuHog(maxMs = 10 * 60_000): CpuHog {
  if (process.env[RUNNING] === '1') return { pid: undefined, stop: () => undefined };
  const child = spawn(process.execPath, [SCRIPT, String(process.pid), String(maxMs)], { stdio: ['ignore', 'inherit', 'inherit'] });
  process.env[RUNNING] = '1'; // what this process starts next (test files, workers) sees the core as taken
  return {
    pid: child.pid,
    stop: () => {
      child.kill('SIGKILL');
      delete process.env[RUNNING];
    },
  };
}
