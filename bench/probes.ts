/**
 * What the benchmark reads while the pipeline runs: CPU time and memory of processes (from
 * /proc/<pid>/stat and /proc/<pid>/status), whole-box CPU (/proc/stat), and the consumer lag of
 * every stage group of a run.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import type { Admin } from 'kafkajs';
import mysql from 'mysql2/promise';
import { groupStatus } from '../pipeline/group-status.ts';
import { STAGES, type StageName } from '../pipeline/apps/index.ts';
import { topicName } from '../pipeline/topics.ts';
import { readPid } from '../stack/process.ts';
import { readEndpoints } from '../common/endpoints.ts';
import { mysqlClientOptions } from '../common/mysql-url.ts';

let clockTicks: number | undefined;

/** Clock ticks per second of /proc times (`getconf CLK_TCK`, 100 on Linux when unknown). */
function ticksPerSecond(): number {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** User + system CPU time of a process so far, in ms; undefined when the process is gone. */
export function processCpuMs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    return ((utime + stime) * 1000) / ticksPerSecond();
  } catch {
    return undefined;
  }
}

/**
 * Times the process's main thread has gone to sleep and been woken again so far (its voluntary
 * context switches): the event loop's wake-ups, each a cost of its own whatever it does. Undefined
 * when the process is gone.
 */
export function processWakeups(pid: number): number | undefined {
  try {
    return Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
  } catch {
    return undefined;
  }
}

/** The CPU time so far of `pids`, ms, summed (a process gone reads 0). */
export function processesCpuMs(pids: readonly number[]): number {
  return pids.reduce((sum, pid) => sum + (processCpuMs(pid) ?? 0), 0);
}

/** The main threads' wake-ups so far of `pids`, summed (a process gone reads 0). */
export function processesWakeups(pids: readonly number[]): number {
  return pids.reduce((sum, pid) => sum + (processWakeups(pid) ?? 0), 0);
}

export interface ProcessMemory {
  /** Resident set size now, MB (VmRSS). */
  readonly rssMb: number;
  /** Peak resident set size so far, MB (VmHWM). */
  readonly peakRssMb: number;
}

/** Memory of a process from /proc/<pid>/status; undefined when the process is gone. */
export function processMemory(pid: number): ProcessMemory | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
    return { rssMb: round1(kb('VmRSS') / 1024), peakRssMb: round1(kb('VmHWM') / 1024) };
  } catch {
    return undefined;
  }
}

export interface BoxCpu {
  /** Busy jiffies (all but idle and iowait). */
  readonly busy: number;
  readonly total: number;
}

/** Whole-machine CPU counters from /proc/stat. */
export function boxCpu(): BoxCpu {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  const total = v.reduce((a, b) => a + b, 0);
  return { busy: total - (v[3] ?? 0) - (v[4] ?? 0), total };
}

/** Share of the machine's CPU busy between two readings, 0–1. */
export function boxBusyShare(from: BoxCpu, to: BoxCpu): number {
  const total = to.total - from.total;
  return total > 0 ? round3((to.busy - from.busy) / total) : 0;
}

/** Busy CPU time of the whole machine so far (all cores summed), ms. */
export function boxBusyMs(cpu: BoxCpu): number {
  return (cpu.busy * 1000) / ticksPerSecond();
}

/** The co-located services the bench charges CPU to, beside the workers and itself. */
export const SERVICES = ['broker', 'registry', 'mariadb', 'clickhouse'] as const;
export type Service = (typeof SERVICES)[number];

/** A process whose command name is one of `names` (the first found), from /proc/<pid>/comm. */
function findProcess(names: readonly string[]): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (names.includes(readFileSync(`/proc/${entry}/comm`, 'utf8').trim())) return Number(entry);
    } catch {
      // gone since the listing
    }
  }
  return undefined;
}

/**
 * The process listening on TCP `port` (IPv4 or IPv6): the socket's inode from /proc/net/tcp{,6},
 * then the process holding it among /proc/<pid>/fd. Undefined when none is found (or not readable).
 */
function listeningPid(port: number): number | undefined {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      // local address "ADDR:PORT", state 0A = LISTEN, inode in the tenth column
      if (f.length > 9 && f[1]!.endsWith(`:${hexPort}`) && f[3] === '0A') inodes.add(f[9]!);
    }
  }
  if (inodes.size === 0) return undefined;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      for (const fd of readdirSync(`/proc/${entry}/fd`)) {
        const target = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${entry}/fd/${fd}`))?.[1];
        if (target !== undefined && inodes.has(target)) return Number(entry);
      }
    } catch {
      // gone since the listing, or not ours to read
    }
  }
  return undefined;
}

/** The port of `host:port` or of a URL. */
const portOf = (address: string): number => Number(/:(\d+)(?:\/|$)/.exec(address)?.[1]);

/**
 * CPU time so far of each service of the local stack, ms. Each is the process listening on the
 * service's port (so a stack started by another checkout is charged too), else the PID file of this
 * checkout's `stack up`; MariaDB may be the machine's own server, found by name. A service not found
 * reads 0.
 */
export function serviceCpuMs(): Record<Service, number> {
  const endpoints = readEndpoints();
  const at = (address: string | undefined) => (address === undefined ? undefined : listeningPid(portOf(address)));
  const pids: Record<Service, number | undefined> = {
    broker: at(endpoints.kafkaBrokers[0]) ?? readPid('kafka'),
    registry: at(endpoints.schemaRegistryUrl) ?? readPid('registry'),
    mariadb: readPid('mariadb') ?? findProcess(['mariadbd', 'mysqld']),
    clickhouse: at(endpoints.clickhouseUrl) ?? readPid('clickhouse'),
  };
  const out = {} as Record<Service, number>;
  for (const service of SERVICES) out[service] = pids[service] === undefined ? 0 : (processCpuMs(pids[service]!) ?? 0);
  return out;
}

/** MariaDB's server-wide statement counters (SHOW GLOBAL STATUS). */
export interface SqlCounters {
  /** Statements clients sent (Questions). */
  readonly statements: number;
  readonly inserts: number;
  readonly updates: number;
  readonly deletes: number;
  readonly selects: number;
  /** fsync() calls InnoDB made (Innodb_data_fsyncs): each autocommitted write waits for one, shared by a group commit. */
  readonly fsyncs: number;
}

const SQL_STATUS: Record<keyof SqlCounters, string> = {
  statements: 'Questions',
  inserts: 'Com_insert',
  updates: 'Com_update',
  deletes: 'Com_delete',
  selects: 'Com_select',
  fsyncs: 'Innodb_data_fsyncs',
};

/**
 * The statement counters of the server at `url`; undefined when it does not answer. Server-wide:
 * everything that ran on the server between two readings counts (the bench's own two readings too).
 */
export async function sqlCounters(url: string): Promise<SqlCounters | undefined> {
  let connection: mysql.Connection | undefined;
  try {
    connection = await mysql.createConnection({ ...mysqlClientOptions(url, readEndpoints().mysqlSecurity), connectTimeout: 5_000 });
    const [rows] = await connection.query<mysql.RowDataPacket[]>('SHOW GLOBAL STATUS WHERE Variable_name IN (?)', [Object.values(SQL_STATUS)]);
    const status = new Map(rows.map((r) => [String(r.Variable_name), Number(r.Value)]));
    return Object.fromEntries(Object.entries(SQL_STATUS).map(([k, name]) => [k, status.get(name) ?? 0])) as unknown as SqlCounters;
  } catch {
    return undefined;
  } finally {
    await connection?.end().catch(() => undefined);
  }
}

/** One reading of the run's consumer groups. */
export interface LagSample {
  /** ms since the epoch. */
  readonly at: number;
  /** Lag (end − committed offsets, summed over the group's input partitions) per stage group. */
  readonly byStage: Readonly<Record<StageName, number>>;
  /** Sum of the lags of the event path (decisions and fan-out). */
  readonly pathLag: number;
  /** Persisted-message records the decisions group has committed past, all partitions. */
  readonly persistedCommitted: number;
  /** Committed and end offsets of every group partition, as one string (stable when idle). */
  readonly snapshot: string;
  /** (group, topic, partition) entries read: each may end in one transaction marker no consumer reads. */
  readonly partitions: number;
}

/** The stage groups on the way from a persisted message to the vendor. */
export const PATH_STAGES: readonly StageName[] = ['decisions', 'fan-out'];

export async function sampleLag(admin: Admin, applicationId: string, topicPrefix: string): Promise<LagSample> {
  const byStage = {} as Record<StageName, number>;
  const parts: string[] = [];
  let persistedCommitted = 0;
  const persisted = topicName('persisted', topicPrefix);
  for (const stage of STAGES) {
    const status = await groupStatus(admin, `${applicationId}-${stage}`);
    byStage[stage] = status.topics.reduce((sum, t) => sum + t.lag, 0);
    for (const t of status.topics) {
      for (const p of t.partitions) parts.push(`${stage}/${t.topic}/${p.partition}=${p.committed}/${p.end}`);
      if (stage === 'decisions' && t.topic === persisted) persistedCommitted = t.partitions.reduce((sum, p) => sum + p.committed, 0);
    }
  }
  const pathLag = PATH_STAGES.reduce((sum, s) => sum + byStage[s], 0);
  return { at: Date.now(), byStage, pathLag, persistedCommitted, snapshot: parts.sort().join(','), partitions: parts.length };
}

/** Least-squares slope of y over x (per unit of x); 0 with fewer than two points. */
export function slope(points: ReadonlyArray<readonly [number, number]>): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  const sxx = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  const sxy = points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  return sxx === 0 ? 0 : sxy / sxx;
}

/** The value at quantile q (0–1) of an ascending-sorted array (nearest rank). */
export function quantile(sorted: readonly number[], q: number): number | null {
  if (sorted.length === 0) return null;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i]!;
}

export const round1 = (x: number) => Math.round(x * 10) / 10;
export const round3 = (x: number) => Math.round(x * 1000) / 1000;
