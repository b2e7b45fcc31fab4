import { spawn, execFileSync, type SpawnOptions } from 'node:child_process';
import { existsSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { LOG_DIR, ensureDir, stackPath } from './paths.ts';

/** PID-file bookkeeping for the processes `stack up` starts, so `down` stops only those. */
export function pidFile(service: string): string {
  return stackPath('run', `${service}.pid`);
}

export function readPid(service: string): number | undefined {
  const file = pidFile(service);
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, 'utf8').trim());
  return Number.isInteger(pid) && pid > 0 && isAlive(pid) ? pid : undefined;
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export function logFile(service: string): string {
  return join(ensureDir(LOG_DIR), `${service}.log`);
}

/** Starts a long-running process detached from this one, output appended to its log, PID recorded. */
export function startDetached(service: string, command: string, args: string[], options: SpawnOptions = {}): number {
  ensureDir(stackPath('run'));
  const out = openSync(logFile(service), 'a');
  const child = spawn(command, args, { ...options, detached: true, stdio: ['ignore', out, out] });
  if (child.pid === undefined) throw new Error(`could not start ${service} (${command})`);
  child.unref();
  writeFileSync(pidFile(service), String(child.pid));
  return child.pid;
}

/** Stops a process this stack started: SIGTERM, then SIGKILL after `graceMs`. */
export async function stopByPidFile(service: string, graceMs = 15_000): Promise<boolean> {
  const pid = readPid(service);
  rmSync(pidFile(service), { force: true });
  if (pid === undefined) return false;
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (isAlive(pid) && Date.now() < deadline) await delay(200);
  if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  return true;
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export function portOpen(port: number, host = '127.0.0.1', timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host });
    const done = (open: boolean) => {
      socket.destroy();
      resolve(open);
    };
    // Postponed to the check phase: after a synchronous install step (Maven, apt) blocked the event
    // loop past the timeout, the timer fires before the poll phase would report the connect.
    socket.setTimeout(timeoutMs, () => setImmediate(() => done(false)));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/**
 * Polls `check` until it returns true, printing progress every few seconds; fails with the tail of
 * the service's log when `timeoutMs` passes or the process died.
 */
export async function waitFor(service: string, check: () => Promise<boolean>, options: { timeoutMs: number; pid?: number }): Promise<void> {
  const started = Date.now();
  let lastReport = started;
  for (;;) {
    if (await check().catch(() => false)) return; // a check that throws means "not ready yet"; the log tail explains a timeout
    if (options.pid !== undefined && !isAlive(options.pid)) throw new Error(`${service} exited while starting; log tail:\n${logTail(service)}`);
    if (Date.now() - started > options.timeoutMs) throw new Error(`${service} not ready after ${options.timeoutMs} ms; log tail:\n${logTail(service)}`);
    if (Date.now() - lastReport >= 5000) {
      lastReport = Date.now();
      console.log(`[stack] waiting for ${service} (${Math.round((Date.now() - started) / 1000)} s) ...`);
    }
    await delay(250);
  }
}

export function logTail(service: string, lines = 30): string {
  const file = logFile(service);
  if (!existsSync(file)) return '(no log)';
  return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
}

/**
 * Runs a setup command (maven, apt-get, ...) with its output in the service's log. `hideArgs`: its
 * arguments hold secrets, so a failure names the command alone.
 */
export function runLogged(service: string, command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; hideArgs?: boolean } = {}): void {
  const { hideArgs, ...spawnOptions } = options;
  const out = openSync(logFile(service), 'a');
  try {
    execFileSync(command, args, { ...spawnOptions, stdio: ['ignore', out, out] });
  } catch (error) {
    throw new Error(`${command} ${hideArgs ? '(arguments not shown)' : args.join(' ')} failed; log tail:\n${logTail(service)}`, {
      cause: hideArgs ? undefined : error,
    });
  }
}

export function commandExists(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

let aptUpdated = false;
const APT_LOCK_WAIT = ['-o', 'DPkg::Lock::Timeout=300'];
/**
 * Installs Debian packages (this machine is root; `apt-get update` runs once per process). Two
 * installs at once (test files run in parallel) take turns on apt's locks instead of failing.
 */
export function aptInstall(service: string, packages: string[]): void {
  console.log(`[stack] installing ${packages.join(', ')} from Debian packages ...`);
  if (!aptUpdated) {
    runLogged(service, 'apt-get', [...APT_LOCK_WAIT, 'update']);
    aptUpdated = true;
  }
  runLogged(service, 'apt-get', [...APT_LOCK_WAIT, 'install', '-y', '--no-install-recommends', ...packages], {
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
}
