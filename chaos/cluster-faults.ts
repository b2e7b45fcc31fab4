/**
 * The chaos run's faults on the 3-broker cluster (`npm run chaos -- --brokers 3`, stack/kafka-cluster.ts;
 * docs/operations.md, "Cluster mode" and its runbooks): a broker SIGKILLed and started again, and a
 * reassignment of every partition of the run while the workload flows, each timed from the outside.
 *
 * - Broker loss: the broker that leads the most of the run's partitions is SIGKILLed (with combined
 *   nodes it is also a controller; the other two keep the quorum), stays down `downMs`, and is started
 *   again on its kept data. Timed: until every partition has a leader on a live broker, until the
 *   stages' committed offsets pass the ends the inputs had at the kill (caught up), and after the
 *   restart until every partition's ISR is whole again.
 * - Reassignment (Kafka's AlterPartitionReassignments through the kafkajs admin): every partition of
 *   the run (its topics, changelogs, DLQ) first drops its leader's replica (leadership moves, the
 *   replica's log is deleted), then gets it back as the last replica (a full copy from the others).
 *   Timed: each phase until the controller lists no reassignment and the replicas are as asked, and
 *   until the stages caught up.
 */
import type { Admin, PartitionMetadata } from 'kafkajs';
import { clusterNodes, killClusterNode, startClusterNode, CLUSTER_REPLICATION } from '../stack/kafka-cluster.ts';
import { chaosAdmin, sleep, stageStatuses } from './drain.ts';

export interface ReplicationCheck {
  readonly topics: number;
  /** `topic: replicas r, min.insync.replicas m` of every topic (the run's and Kafka's internal ones) not replicated as the cluster's settings say. */
  readonly offenders: string[];
}

/** Time from the fault to each milestone, ms; `null` when the milestone was not reached in time. */
export interface BrokerLossFigures {
  readonly broker: number;
  readonly wasController: boolean;
  readonly partitionsLed: number;
  readonly leadersMovedMs: number | null;
  readonly caughtUpMs: number | null;
  /** When each stage caught up after the kill. */
  readonly caughtUpByStage: CaughtUp;
  readonly downMs: number;
  /** From the restart's start. */
  readonly restartMs: number;
  readonly isrWholeMs: number | null;
  readonly caughtUpAfterRestartMs: number | null;
}

export interface ReassignmentFigures {
  readonly partitions: number;
  readonly leadersMovedMs: number | null;
  readonly dropPhaseMs: number | null;
  readonly addPhaseMs: number | null;
  readonly isrWholeMs: number | null;
  readonly caughtUpMs: number | null;
  readonly caughtUpByStage: CaughtUp;
}

export interface ClusterFigures {
  readonly replication: ReplicationCheck;
  readonly brokerLoss?: BrokerLossFigures;
  readonly reassignment?: ReassignmentFigures;
  readonly errors: string[];
}

interface PartitionState {
  readonly topic: string;
  readonly partition: number;
  readonly leader: number;
  readonly replicas: number[];
  readonly isr: number[];
}

/** How long each milestone is waited for, ms. */
export const MILESTONE_TIMEOUT_MS = 180_000;

/** The run's topics: the pipeline's (`<prefix>…`) and the stages' changelogs and DLQ (`<applicationId>-…`). */
async function runTopics(admin: Admin, topicPrefix: string, applicationId: string): Promise<string[]> {
  return (await admin.listTopics()).filter((t) => t.startsWith(topicPrefix) || t.startsWith(`${applicationId}-`)).sort();
}

async function partitionStates(admin: Admin, topics: string[]): Promise<PartitionState[]> {
  const { topics: metadata } = await admin.fetchTopicMetadata({ topics });
  return metadata.flatMap((t) =>
    t.partitions.map((p: PartitionMetadata) => ({ topic: t.name, partition: p.partitionId, leader: p.leader, replicas: [...p.replicas], isr: [...p.isr] })),
  );
}

/**
 * Polls `check` every `everyMs` from `since`; the ms from `since` until it held, or null after the
 * timeout. The run's emulators share this process: polls are spaced so that they keep answering
 * the workers promptly on a loaded machine.
 */
async function until(since: number, check: () => Promise<boolean>, everyMs = 1000, timeoutMs = MILESTONE_TIMEOUT_MS): Promise<number | null> {
  for (;;) {
    // A check that throws (a broker unreachable, metadata moving) has not held yet.
    if (await check().catch(() => false)) return Date.now() - since;
    if (Date.now() - since > timeoutMs) return null;
    await sleep(everyMs);
  }
}

/** When each stage group caught up, ms from the fault; null if it did not in time. */
export type CaughtUp = Record<string, number | null>;

/**
 * The end offsets every stage group's inputs have now; `wait(since)` resolves once every group's
 * committed offsets reached them (what was in the inputs at this moment is processed), with the
 * time each group got there. Under exactly-once the stages commit past transaction markers
 * (topology/task-input.ts), so a processed partition's committed offset reaches the end read then.
 */
async function caughtUpCheck(admin: Admin, applicationId: string): Promise<{ wait(since: number): Promise<{ allMs: number | null; byStage: CaughtUp }> }> {
  let ends: Map<string, number> | undefined;
  let groups: string[] = [];
  for (let attempt = 0; ends === undefined; attempt++) {
    try {
      const statuses = await stageStatuses(admin, applicationId);
      groups = statuses.map((s) => s.groupId);
      ends = new Map(statuses.flatMap((s) => s.topics.flatMap((t) => t.partitions.map((p) => [`${s.groupId}/${t.topic}/${p.partition}`, p.end] as const))));
    } catch (error) {
      if (attempt >= 60) throw error;
      await sleep(500);
    }
  }
  const target = ends;
  return {
    async wait(since) {
      const byStage: Record<string, number | null> = Object.fromEntries(groups.map((g) => [g.slice(applicationId.length + 1), null]));
      // Every stage group's offsets: many requests per poll, so every 2 s.
      const allMs = await until(
        since,
        async () => {
          const statuses = await stageStatuses(admin, applicationId);
          for (const s of statuses) {
            const stage = s.groupId.slice(applicationId.length + 1);
            const done = s.topics.every((t) => t.partitions.every((p) => p.committed >= (target.get(`${s.groupId}/${t.topic}/${p.partition}`) ?? 0)));
            if (done && byStage[stage] === null) byStage[stage] = Date.now() - since;
          }
          return Object.values(byStage).every((ms) => ms !== null);
        },
        2000,
      );
      return { allMs, byStage };
    },
  };
}

/** Every run topic and Kafka's offsets and transaction-state topics are replicated as the cluster's settings say. */
export async function checkReplication(topicPrefix: string, applicationId: string): Promise<ReplicationCheck> {
  const admin = chaosAdmin();
  await admin.connect();
  try {
    const own = await runTopics(admin, topicPrefix, applicationId);
    const internal = ['__consumer_offsets', '__transaction_state'];
    const states = await partitionStates(admin, [...own, ...internal]);
    const described = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [...own, ...internal].map((name) => ({ type: 2, name, configNames: ['min.insync.replicas'] })),
    });
    const minIsr = new Map(
      described.resources.map((r) => [r.resourceName, Number(r.configEntries.find((e) => e.configName === 'min.insync.replicas')?.configValue)]),
    );
    const offenders: string[] = [];
    for (const topic of [...own, ...internal]) {
      const replicas = new Set(states.filter((s) => s.topic === topic).map((s) => s.replicas.length));
      const m = minIsr.get(topic);
      // __consumer_offsets keeps the broker's min.insync.replicas; __transaction_state has its own (transaction.state.log.min.isr).
      const wantIsr = topic === '__consumer_offsets' || topic === '__transaction_state' ? undefined : CLUSTER_REPLICATION.minInsyncReplicas;
      if (replicas.size !== 1 || !replicas.has(CLUSTER_REPLICATION.factor) || (wantIsr !== undefined && m !== wantIsr))
        offenders.push(`${topic}: replicas ${[...replicas].join('/')}, min.insync.replicas ${m}`);
    }
    return { topics: own.length + internal.length, offenders };
  } finally {
    await admin.disconnect().catch(() => undefined); // best-effort: the check's answer is already decided
  }
}

/** SIGKILL of the broker leading the most of the run's partitions, `downMs` down, started again; timed. */
export async function brokerLoss(
  topicPrefix: string,
  applicationId: string,
  downMs: number,
  note: (kind: string, detail: string) => void,
): Promise<BrokerLossFigures> {
  const admin = chaosAdmin();
  await admin.connect();
  try {
    const topics = await runTopics(admin, topicPrefix, applicationId);
    const before = await partitionStates(admin, topics);
    const led = new Map<number, number>();
    for (const p of before) led.set(p.leader, (led.get(p.leader) ?? 0) + 1);
    const [broker, partitionsLed] = [...led].sort((a, b) => b[1] - a[1])[0]!;
    const node = clusterNodes().find((n) => n.cluster?.nodeId === broker)!;
    const controller = (await admin.describeCluster()).controller;
    const caughtUp = await caughtUpCheck(admin, applicationId);
    const killedAt = Date.now();
    await killClusterNode(node);
    note(
      'broker-kill',
      `SIGKILL to broker ${broker} (${node.name}, leader of ${partitionsLed}/${before.length} run partitions${controller === broker ? ', active controller' : ''})`,
    );
    // The broker comes back `downMs` after the kill whether or not the pipeline caught up meanwhile;
    // both milestones go on being timed from the kill.
    const leadersMoved = until(killedAt, async () => (await partitionStates(admin, topics)).every((p) => p.leader >= 0 && p.leader !== broker)).then((ms) => {
      note('leaders-moved', ms === null ? 'NOT within the timeout' : `every run partition led by a live broker after ${(ms / 1000).toFixed(1)} s`);
      return ms;
    });
    const caughtUpAfterKill = caughtUp.wait(killedAt).then((c) => {
      note(
        'caught-up',
        c.allMs === null ? `NOT within ${MILESTONE_TIMEOUT_MS / 1000} s` : `stages past the inputs' ends at the kill after ${(c.allMs / 1000).toFixed(1)} s`,
      );
      return c;
    });
    await sleep(downMs);
    const restartAt = Math.max(Date.now(), killedAt + downMs);
    const caughtUpAfter = await caughtUpCheck(admin, applicationId);
    await startClusterNode(node);
    const restartMs = Date.now() - restartAt;
    note(
      'broker-up',
      `broker ${broker} answering again ${(restartMs / 1000).toFixed(1)} s after its start (down ${((restartAt - killedAt) / 1000).toFixed(1)} s)`,
    );
    const isrWholeMs = await until(restartAt, async () => (await partitionStates(admin, topics)).every((p) => p.isr.length === p.replicas.length));
    note('isr-whole', isrWholeMs === null ? 'NOT within the timeout' : `every run partition's ISR whole ${(isrWholeMs / 1000).toFixed(1)} s after the restart`);
    const after = await caughtUpAfter.wait(restartAt);
    const [leadersMovedMs, caught] = await Promise.all([leadersMoved, caughtUpAfterKill]);
    return {
      broker,
      wasController: controller === broker,
      partitionsLed,
      leadersMovedMs,
      caughtUpMs: caught.allMs,
      caughtUpByStage: caught.byStage,
      downMs: restartAt - killedAt,
      restartMs,
      isrWholeMs,
      caughtUpAfterRestartMs: after.allMs,
    };
  } finally {
    await admin.disconnect().catch(() => undefined); // best-effort: the figures are already measured
  }
}

/** Asks for `wanted` replicas per partition and waits until the controller finished; ms, or null. */
async function reassign(admin: Admin, wanted: ReadonlyArray<{ topic: string; partition: number; replicas: number[] }>): Promise<number | null> {
  const started = Date.now();
  const byTopic = new Map<string, Array<{ partition: number; replicas: number[] }>>();
  for (const w of wanted) byTopic.set(w.topic, [...(byTopic.get(w.topic) ?? []), { partition: w.partition, replicas: w.replicas }]);
  await admin.alterPartitionReassignments({ topics: [...byTopic].map(([topic, partitionAssignment]) => ({ topic, partitionAssignment })) });
  const want = new Map(wanted.map((w) => [`${w.topic}/${w.partition}`, w.replicas.join(',')]));
  const topics = [...byTopic.keys()];
  return until(started, async () => {
    const ongoing = await admin.listPartitionReassignments({});
    if (ongoing.topics.some((t) => t.partitions.length > 0)) return false;
    return (await partitionStates(admin, topics)).every((p) => want.get(`${p.topic}/${p.partition}`) === p.replicas.join(','));
  });
}

/** Every run partition's leader replica dropped, then added back last; timed. */
export async function reassignment(topicPrefix: string, applicationId: string, note: (kind: string, detail: string) => void): Promise<ReassignmentFigures> {
  const admin = chaosAdmin();
  await admin.connect();
  try {
    const topics = await runTopics(admin, topicPrefix, applicationId);
    const before = await partitionStates(admin, topics);
    const caughtUp = await caughtUpCheck(admin, applicationId);
    const started = Date.now();
    note('reassign', `${before.length} partitions of ${topics.length} topics: each drops its leader's replica`);
    const dropPhaseMs = await reassign(
      admin,
      before.map((p) => ({ topic: p.topic, partition: p.partition, replicas: p.replicas.filter((r) => r !== p.leader) })),
    );
    const leadersMovedMs = await until(started, async () => {
      const now = new Map((await partitionStates(admin, topics)).map((p) => [`${p.topic}/${p.partition}`, p.leader]));
      return before.every((p) => {
        const leader = now.get(`${p.topic}/${p.partition}`);
        return leader !== undefined && leader >= 0 && leader !== p.leader;
      });
    });
    note('reassign-dropped', dropPhaseMs === null ? 'NOT within the timeout' : `done after ${(dropPhaseMs / 1000).toFixed(1)} s; every leader moved`);
    const addStarted = Date.now();
    const addPhaseMs = await reassign(
      admin,
      before.map((p) => ({ topic: p.topic, partition: p.partition, replicas: [...p.replicas.filter((r) => r !== p.leader), p.leader] })),
    );
    const isrWholeMs = await until(addStarted, async () => (await partitionStates(admin, topics)).every((p) => p.isr.length === CLUSTER_REPLICATION.factor));
    note('reassign-added', addPhaseMs === null ? 'NOT within the timeout' : `replicas copied back after ${(addPhaseMs / 1000).toFixed(1)} s`);
    const caught = await caughtUp.wait(started);
    return { partitions: before.length, leadersMovedMs, dropPhaseMs, addPhaseMs, isrWholeMs, caughtUpMs: caught.allMs, caughtUpByStage: caught.byStage };
  } finally {
    await admin.disconnect().catch(() => undefined); // best-effort: the figures are already measured
  }
}

/**
 * The cluster recovered: every run topic replicated as configured, leadership left the lost broker,
 * its replicas were whole again after its restart, and both reassignment phases completed with
 * every leader moved. How long the stages took to catch up is reported, not judged here: it
 * depends on the machine's load and on the other faults of the run, and whether every partition
 * caught up in the end is the drain's verdict (no stalled partition).
 */
export function clusterRecovered(figures: ClusterFigures): boolean {
  const b = figures.brokerLoss;
  const r = figures.reassignment;
  const reached = (...ms: Array<number | null>) => ms.every((m) => m !== null);
  return (
    figures.errors.length === 0 &&
    figures.replication.offenders.length === 0 &&
    b !== undefined &&
    reached(b.leadersMovedMs, b.isrWholeMs) &&
    r !== undefined &&
    reached(r.leadersMovedMs, r.dropPhaseMs, r.addPhaseMs, r.isrWholeMs)
  );
}
