import { readKey } from '../../common/config.ts';
import { CONFIG_KEYS } from '../../common/config-keys.ts';
import { createPipelineTopics, pipelineTopicSizes, type TopicPlan } from '../../pipeline/topics-admin.ts';

export const topicsHelp = `pushctl topics create|describe [--partitions N] [--prefix P]

  create     create every pipeline topic that does not exist yet (idempotent);
             partitions from --partitions or PUSH_PARTITIONS (default 6)
  describe   each topic with partitions, end offsets and non-default configs`;

export function topicPlan(args: string[], env = process.env): TopicPlan {
  const flag = (name: string) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  return {
    partitions: readKey({ PUSH_PARTITIONS: flag('--partitions') ?? env.PUSH_PARTITIONS }, CONFIG_KEYS.PUSH_PARTITIONS),
    prefix: readKey({ PUSH_TOPIC_PREFIX: flag('--prefix') ?? env.PUSH_TOPIC_PREFIX }, CONFIG_KEYS.PUSH_TOPIC_PREFIX),
  };
}

export async function topicsCommand(args: string[]): Promise<number> {
  const plan = topicPlan(args);
  if (args[0] === 'create') {
    const created = await createPipelineTopics(plan);
    console.log(created.length ? `created ${created.join(', ')} with ${plan.partitions} partitions` : 'all pipeline topics exist');
    return 0;
  }
  if (args[0] === 'describe') {
    for (const t of await pipelineTopicSizes(plan.prefix)) {
      console.log(t.exists ? `${t.name.padEnd(28)} partitions ${String(t.partitions).padEnd(4)} records ${t.records}` : `${t.name.padEnd(28)} (missing)`);
    }
    return 0;
  }
  console.error(topicsHelp);
  return 2;
}
