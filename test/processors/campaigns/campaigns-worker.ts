/**
 * A campaign-expansion worker process for test/processors/campaigns/expansion-crash.stack.test.ts: runs the expansion
 * application on the topics of WORKER_PREFIX (progress in WORKER_MYSQL_URL) at WORKER_RATE
 * requests per second until SIGTERM or SIGKILL. Prints {"event":"started"} once running.
 */
import mysql from 'mysql2/promise';
import { closeOnSignals } from '../../../topology/shutdown.ts';
import { createLogger } from '../../../common/log.ts';
import { expansionApp } from '../../entry/support.ts';

const env = process.env;
const pool = mysql.createPool({ uri: env.WORKER_MYSQL_URL!, connectionLimit: 2, timezone: 'Z' });
const app = expansionApp({
  prefix: env.WORKER_PREFIX!,
  pool,
  ratePerSecond: Number(env.WORKER_RATE),
  applicationId: env.WORKER_APP_ID!,
  sessionTimeoutMs: 6_000,
});
closeOnSignals([app, { close: () => pool.end() }], { logger: createLogger({ worker: process.pid }, 'warn') });
await app.start();
process.stdout.write(JSON.stringify({ event: 'started' }) + '\n');
