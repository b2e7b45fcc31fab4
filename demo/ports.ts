/**
 * Ports for the servers a run starts (workers' metrics and receipt endpoints, store forwarders, a
 * test's own broker), picked where the kernel never hands out ports by itself.
 *
 * A port taken with listen(0) and released comes from the ephemeral range, the same range the
 * kernel draws the local port of every outgoing connection from. Between the pick and the moment a
 * worker binds it, any of the many client connections of a run (Kafka, MySQL, ClickHouse) may take
 * that port as its local end, and the bind fails with EADDRINUSE on every restart of that worker.
 * A port below the ephemeral range is never taken that way: only an explicit bind can hold it.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** The first port of the kernel's ephemeral range (Linux: net.ipv4.ip_local_port_range). */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(low) && low > 0) return low;
  } catch {
    // Not Linux: IANA's dynamic range starts at 49152.
  }
  return 49_152;
}

/** Picks come from [PICK_LOW, ephemeral low): above the registered services this box runs. */
const PICK_LOW = 20_000;
const issuedPorts = new Set<number>();

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A port nothing listens on now, below the ephemeral range, that this process has not handed out
 * before (so two servers of one run never get the same port).
 */
export async function freePort(): Promise<number> {
  const high = ephemeralLow();
  if (high - PICK_LOW < 1_000) throw new Error(`the ephemeral port range starts at ${high}: too few ports below it to pick from`);
  for (let attempt = 0; attempt < 1_000; attempt++) {
    const port = PICK_LOW + Math.floor(Math.random() * (high - PICK_LOW));
    if (issuedPorts.has(port) || !(await canListen(port))) continue;
    issuedPorts.add(port);
    return port;
  }
  throw new Error(`no free port in ${PICK_LOW}-${high - 1} after 1000 tries`);
}

/** `count` consecutive ports nothing listens on now (a service that takes its ports from one base), below the ephemeral range. */
export async function freePortRange(count: number): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const base = await freePort();
    let all = true;
    for (let p = base + 1; p < base + count && all; p++) all = !issuedPorts.has(p) && (await canListen(p));
    if (!all) continue;
    for (let p = base + 1; p < base + count; p++) issuedPorts.add(p);
    return base;
  }
  throw new Error(`no ${count} consecutive free ports after 100 tries`);
}
