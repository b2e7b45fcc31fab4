import { execFile } from 'node:child_process';

/** What a user sees of one pushctl run: exit code, stdout and stderr. */
export interface PushctlResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs cli/pushctl.ts as a process, the way an operator does, with `env` over this environment. */
export function pushctl(args: readonly string[], env: Record<string, string> = {}, timeoutMs = 120_000): Promise<PushctlResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'cli/pushctl.ts', ...args],
      { env: { ...process.env, ...env }, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
        resolve({ code, stdout, stderr });
      },
    );
  });
}
