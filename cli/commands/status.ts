import { AssignerProtocol, Kafka, logLevel, type Admin } from 'kafkajs';
import { readString } from '../../common/config.ts';
import { readEndpoints } from '../../common/endpoints.ts';

export const statusHelp = `pushctl status [--app offline-push] [--json]

  the pipeline's consumer group: state, members with their assigned partitions, and per input
  topic the committed offsets, end offsets and lag (one line per stage's source topic)`;

export interface TopicLag {
  readonly topic: string;
  readonly partitions: Array<{ partition: number; committed: number; end: number; lag: number }>;
  readonly lag: number;
}

export interface GroupStatus {
  readonly groupId: string;
  readonly state: string;
  readonly members: Array<{ memberId: string; clientId: string; host: string; assignment: Record<string, number[]> }>;
  readonly topics: TopicLag[];
}

export async function groupStatus(admin: Admin, groupId: string): Promise<GroupStatus> {
  const { groups } = await admin.describeGroups([groupId]);
  const group = groups[0]!;
  const members = group.members.map((m) => {
    const decoded = m.memberAssignment.length > 0 ? AssignerProtocol.MemberAssignment.decode(m.memberAssignment) : null;
    return { memberId: m.memberId, clientId: m.clientId, host: m.clientHost, assignment: decoded?.assignment ?? {} };
  });
  const committed = await admin.fetchOffsets({ groupId });
  const topics: TopicLag[] = [];
  for (const { topic, partitions } of committed) {
    const ends = new Map((await admin.fetchTopicOffsets(topic)).map((p) => [p.partition, Number(p.high)]));
    const rows = partitions.map((p) => {
      const end = ends.get(p.partition) ?? 0;
      const at = Number(p.offset) < 0 ? 0 : Number(p.offset);
      return { partition: p.partition, committed: at, end, lag: Math.max(0, end - at) };
    });
    topics.push({ topic, partitions: rows, lag: rows.reduce((sum, r) => sum + r.lag, 0) });
  }
  return { groupId, state: group.state, members, topics };
}

export async function statusCommand(args: string[]): Promise<number> {
  const i = args.indexOf('--app');
  const groupId = readString({ PUSH_APPLICATION_ID: i >= 0 ? args[i + 1] : process.env.PUSH_APPLICATION_ID }, 'PUSH_APPLICATION_ID', 'offline-push');
  const admin = new Kafka({ clientId: 'pushctl', brokers: readEndpoints().kafkaBrokers, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const status = await groupStatus(admin, groupId);
    if (args.includes('--json')) {
      console.log(JSON.stringify(status, null, 2));
      return 0;
    }
    console.log(`group ${status.groupId}: ${status.state}, ${status.members.length} member(s)`);
    for (const m of status.members) {
      const parts = Object.entries(m.assignment).map(([t, ps]) => `${t}[${ps.join(',')}]`).join(' ');
      console.log(`  ${m.clientId} ${m.host} ${parts || '(no partitions)'}`);
    }
    for (const t of status.topics) {
      console.log(`  ${t.topic.padEnd(40)} lag ${String(t.lag).padStart(8)}  ${t.partitions.map((p) => `p${p.partition}:${p.lag}`).join(' ')}`);
    }
    return 0;
  } finally {
    await admin.disconnect();
  }
}
