import { Kafka, logLevel, type ITopicConfig } from 'kafkajs';
import { readInt, readString } from '../../common/config.ts';
import { readEndpoints } from '../../common/endpoints.ts';
import { TOPICS, topicName, type TopicKey } from '../../pipeline/topics.ts';

export const topicsHelp = `pushctl topics create|describe [--partitions N] [--prefix P]

  create     create every pipeline topic that does not exist yet (idempotent);
             partitions from --partitions or PUSH_PARTITIONS (default 6)
  describe   each topic with partitions, end offsets and non-default configs`;

export interface TopicPlan {
  readonly partitions: number;
  readonly prefix: string;
}

export function topicPlan(args: string[], env = process.env): TopicPlan {
  const flag = (name: string) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  return {
    partitions: readInt({ PUSH_PARTITIONS: flag('--partitions') ?? env.PUSH_PARTITIONS }, 'PUSH_PARTITIONS', 6, { min: 1, max: 256 }),
    prefix: readString({ PUSH_TOPIC_PREFIX: flag('--prefix') ?? env.PUSH_TOPIC_PREFIX }, 'PUSH_TOPIC_PREFIX', ''),
  };
}

/** Creates the pipeline's topics that are missing; returns the names it created. */
export async function createPipelineTopics(plan: TopicPlan, brokers = readEndpoints().kafkaBrokers): Promise<string[]> {
  const admin = new Kafka({ clientId: 'pushctl', brokers, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const wanted: ITopicConfig[] = (Object.keys(TOPICS) as TopicKey[])
      .map((key) => ({ key, name: topicName(key, plan.prefix) }))
      .filter(({ name }) => !existing.has(name))
      .map(({ key, name }) => {
        const configs = 'configs' in TOPICS[key] ? (TOPICS[key] as { configs: Record<string, string> }).configs : {};
        return { topic: name, numPartitions: plan.partitions, replicationFactor: 1, configEntries: Object.entries(configs).map(([n, value]) => ({ name: n, value })) };
      });
    if (wanted.length > 0) await admin.createTopics({ topics: wanted, waitForLeaders: true });
    return wanted.map((t) => t.topic);
  } finally {
    await admin.disconnect();
  }
}

export async function topicsCommand(args: string[]): Promise<number> {
  const plan = topicPlan(args);
  if (args[0] === 'create') {
    const created = await createPipelineTopics(plan);
    console.log(created.length ? `created ${created.join(', ')} with ${plan.partitions} partitions` : 'all pipeline topics exist');
    return 0;
  }
  if (args[0] === 'describe') {
    const admin = new Kafka({ clientId: 'pushctl', brokers: readEndpoints().kafkaBrokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      const names = (Object.keys(TOPICS) as TopicKey[]).map((key) => topicName(key, plan.prefix));
      const existing = new Set(await admin.listTopics());
      for (const name of names) {
        if (!existing.has(name)) {
          console.log(`${name.padEnd(28)} (missing)`);
          continue;
        }
        const offsets = await admin.fetchTopicOffsets(name);
        const records = offsets.reduce((sum, p) => sum + Number(p.high) - Number(p.low), 0);
        console.log(`${name.padEnd(28)} partitions ${String(offsets.length).padEnd(4)} records ${records}`);
      }
    } finally {
      await admin.disconnect();
    }
    return 0;
  }
  console.error(topicsHelp);
  return 2;
}
