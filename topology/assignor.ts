import type { PartitionAssigner } from 'kafkajs';
import { AssignerProtocol } from 'kafkajs';
import type { Topology } from './builder.ts';

export const TASK_ASSIGNOR_NAME = 'OfflinePushTaskAssignor';

/** A task id `<subtopology>_<partition>`. */
export type TaskId = string;

export function taskId(subtopology: number, partition: number): TaskId {
  return `${subtopology}_${partition}`;
}

/**
 * Balances tasks over members, keeping each member's previous tasks where balance allows (fewer
 * stores to restore). Deterministic: same input, same output. Returns memberId → task ids.
 */
export function assignTasks(tasks: readonly TaskId[], members: ReadonlyArray<{ memberId: string; previous: readonly TaskId[] }>): Map<string, TaskId[]> {
  const sortedMembers = [...members].sort((a, b) => (a.memberId < b.memberId ? -1 : 1));
  const result = new Map<string, TaskId[]>(sortedMembers.map((m) => [m.memberId, []]));
  if (sortedMembers.length === 0) return result;
  const ceil = Math.ceil(tasks.length / sortedMembers.length);
  const open = new Set(tasks);
  for (const m of sortedMembers) {
    for (const t of [...m.previous].sort()) {
      if (!open.has(t) || result.get(m.memberId)!.length >= ceil) continue;
      open.delete(t);
      result.get(m.memberId)!.push(t);
    }
  }
  const leastLoaded = () => sortedMembers.reduce((best, m) => (result.get(m.memberId)!.length < result.get(best.memberId)!.length ? m : best));
  for (const t of [...open].sort(compareTaskIds)) result.get(leastLoaded().memberId)!.push(t);
  // Sticky placement may leave a spread of 2 or more; move tasks from the fullest to the emptiest.
  for (;;) {
    const counts = sortedMembers.map((m) => result.get(m.memberId)!);
    const max = counts.reduce((a, b) => (b.length > a.length ? b : a));
    const min = counts.reduce((a, b) => (b.length < a.length ? b : a));
    if (max.length - min.length <= 1) break;
    min.push(max.pop()!);
  }
  return result;
}

function compareTaskIds(a: TaskId, b: TaskId): number {
  const [sa, pa] = a.split('_').map(Number) as [number, number];
  const [sb, pb] = b.split('_').map(Number) as [number, number];
  return pa - pb || sa - sb;
}

/**
 * A kafkajs partition assigner that assigns whole tasks: all co-partitioned source partitions of a
 * task go to the same member. Members advertise the tasks they hold in their subscription user
 * data, which keeps assignments sticky across rebalances.
 */
export function taskAssigner(topology: Topology, partitionsOf: (subtopology: number) => number, currentTasks: () => TaskId[]): PartitionAssigner {
  return () => ({
    name: TASK_ASSIGNOR_NAME,
    version: 1,
    async assign({ members }) {
      const tasks: TaskId[] = [];
      for (const sub of topology.subtopologies) for (let p = 0; p < partitionsOf(sub.id); p++) tasks.push(taskId(sub.id, p));
      const decoded = members.map((m) => {
        let previous: TaskId[] = [];
        try {
          const meta = AssignerProtocol.MemberMetadata.decode(m.memberMetadata);
          previous = meta?.userData?.length ? (JSON.parse(meta.userData.toString('utf8')) as TaskId[]) : [];
        } catch {
          previous = [];
        }
        return { memberId: m.memberId, previous };
      });
      const plan = assignTasks(tasks, decoded);
      return [...plan].map(([memberId, ids]) => {
        const assignment: Record<string, number[]> = {};
        for (const id of ids) {
          const [sub, partition] = id.split('_').map(Number) as [number, number];
          for (const topic of topology.subtopologies[sub]!.sourceTopics) (assignment[topic] ??= []).push(partition);
        }
        return { memberId, memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: 1, assignment, userData: Buffer.from(JSON.stringify(ids)) }) };
      });
    },
    protocol({ topics }) {
      return {
        name: TASK_ASSIGNOR_NAME,
        metadata: AssignerProtocol.MemberMetadata.encode({ version: 1, topics, userData: Buffer.from(JSON.stringify(currentTasks())) }),
      };
    },
  });
}
