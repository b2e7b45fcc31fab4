/**
 * Campaign expansion throughput (pipeline/apps/campaigns.ts): one campaign of N uids
 * (a uid file, as large campaigns come) expanded by the `campaigns` application under exactly-once
 * tasks, with no rate limit (PUSH_CAMPAIGN_EXPANSION_RATE at its maximum): uids ÷ time from producing
 * the campaign record to the last of its requests read committed (the file read, the
 * chunks written to the changelog and the expansion all count), once a one-user warm-up campaign
 * has shown the application running; and this process's CPU per request over that time (the
 * expansion runs here, beside the reader). One campaign is one task, so the figure is per task; campaigns on other partitions expand
 * in parallel. Runnable alone: `npx tsx bench/campaign-expansion.ts [uids]`.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { kafkaClient } from '../common/kafka-client.ts';
import { schemaRegistryClient } from '../common/registry-client.ts';
import { readEndpoints } from '../common/endpoints.ts';
import { createLogger } from '../common/log.ts';
import { KafkaEntryPublisher } from '../entry/publisher.ts';
import { buildCampaignsTopology, uidFileReader } from '../pipeline/apps/campaigns.ts';
import { registerSchemas } from '../pipeline/schemas.ts';
import { registryValueSerdes } from '../pipeline/serdes.ts';
import { topicName, type TopicKey } from '../pipeline/topics.ts';
import { StreamsApp } from '../topology/runtime.ts';
import { createTopics, suffix } from './runtime-bench.ts';
import { cancelRecord, type PushCampaignRecord } from '../processors/campaigns/records.ts';

export interface CampaignBenchOptions {
  /** Uids of the campaign. Default 200 000. */
  readonly uids?: number;
  /** Partitions of the topics. Default 6. */
  readonly partitions?: number;
  /** Commit interval of the expansion, ms. Default 100. */
  readonly commitIntervalMs?: number;
}

export interface CampaignBenchResult {
  readonly uids: number;
  readonly seconds: number;
  /** Committed per-user requests per second (one task). */
  readonly requestsPerSecond: number;
  /** CPU of this process (the expansion and its Kafka clients) per 1 000 requests, ms. */
  readonly cpuMsPerThousand: number;
}

const TOPICS: readonly TopicKey[] = ['campaigns', 'requests', 'campaignControl', 'dlq'];

export async function measureCampaignExpansion(o: CampaignBenchOptions = {}): Promise<CampaignBenchResult> {
  const uids = o.uids ?? 200_000;
  const endpoints = readEndpoints();
  const kafka = kafkaClient(endpoints, { clientId: 'campaign-bench' });
  const registry = schemaRegistryClient(endpoints);
  const prefix = `bench-campaign-${suffix()}.`;
  const applicationId = `bench-campaigns-${suffix()}`;
  const dir = mkdtempSync(`${tmpdir()}/campaign-bench-`);
  writeFileSync(`${dir}/warm-up.txt`, 'warm-up-user\n');
  writeFileSync(`${dir}/uids.txt`, Array.from({ length: uids }, (_, i) => `bench-user-${i}`).join('\n'));
  const admin = kafka.admin();
  await admin.connect();
  const publisher = new KafkaEntryPublisher(endpoints, prefix);
  const app = new StreamsApp({
    applicationId,
    topology: buildCampaignsTopology({
      valueSerdes: registryValueSerdes(registry, prefix),
      topicPrefix: prefix,
      expansion: { ratePerSecond: 1_000_000, maxUids: Math.max(1, uids), readUidFile: uidFileReader(dir) },
    }),
    brokers: endpoints.kafkaBrokers,
    kafkaSecurity: readEndpoints().kafkaSecurity,
    dlqTopic: topicName('dlq', prefix),
    commitIntervalMs: o.commitIntervalMs ?? 100,
    logger: createLogger({ service: 'campaign-bench' }, 'error'),
  });
  try {
    await createTopics(
      admin,
      TOPICS.map((k) => topicName(k, prefix)),
      o.partitions ?? 6,
    );
    await registerSchemas(registry, { prefix, topics: TOPICS });
    const reader = kafka.consumer({ groupId: `bench-reader-${suffix()}`, readUncommitted: false, maxWaitTimeInMs: 50 });
    let seen = 0;
    let wanted = 1;
    let reached!: () => void;
    let done = new Promise<void>((r) => (reached = r));
    const joined = new Promise<void>((r) => reader.on(reader.events.GROUP_JOIN, () => r()));
    await reader.connect();
    await reader.subscribe({ topic: topicName('requests', prefix), fromBeginning: true });
    await reader.run({
      eachBatch: async ({ batch }) => {
        seen += batch.messages.length;
        if (seen >= wanted) reached();
      },
    });
    await joined;
    // A one-user campaign first: the application is assigned, restored and running when the clock starts.
    await app.start();
    await publisher.campaign(campaign('bench-warm-up', 'warm-up.txt'));
    await done;
    wanted = 1 + uids;
    done = new Promise<void>((r) => (reached = r));
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    await publisher.campaign(campaign('bench-campaign', 'uids.txt'));
    await done;
    const seconds = (performance.now() - started) / 1000;
    await reader.disconnect();
    const cpu = process.cpuUsage(cpuBefore);
    return {
      uids,
      seconds: Math.round(seconds * 100) / 100,
      requestsPerSecond: Math.round(uids / seconds),
      cpuMsPerThousand: Math.round(((cpu.user + cpu.system) / 1000 / uids) * 1000 * 100) / 100,
    };
  } finally {
    await app.close();
    await publisher.close();
    const topics = (await admin.listTopics()).filter((t) => t.startsWith(prefix) || t.startsWith(applicationId));
    if (topics.length > 0) await admin.deleteTopics({ topics });
    await admin.disconnect();
    rmSync(dir, { recursive: true, force: true });
  }
}

function campaign(id: string, file: string): PushCampaignRecord {
  const base = cancelRecord(id, 'bench', Date.now());
  return { ...base, action: 'CREATE', app_id: 'im.demo', title: 'Bench', body: 'Campaign expansion throughput', uid_file: file };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await measureCampaignExpansion({ uids: Number(process.argv[2] ?? 200_000) });
  console.log(JSON.stringify(result));
}
