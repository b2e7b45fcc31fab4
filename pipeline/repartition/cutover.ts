/**
 * Step 3 of a repartition (docs/operations.md "Growing partitions"): once the old generation is
 * drained and stopped, its state and tables are carried to the new generation. Refuses, saying
 * what to do, while the old generation is not drained or the new one is not prepared.
 */
import { readEndpoints, type Endpoints } from '../../common/endpoints.ts';
import { PushError } from '../../common/errors.ts';
import { copyState, type StoreCopy } from './copy-state.ts';
import { copyTables, type TableCopy } from './copy-tables.ts';
import { checkDrained, describeDrain, drained, type DrainReport } from './drain-check.ts';
import { generationTopics, partitionCounts, repartitionAdmin, type Generation } from './generation.ts';

export interface CutoverPlan {
  readonly from: Generation;
  readonly to: Generation;
  /** Partitions of the new generation. */
  readonly partitions: number;
  /** How long the old generation's topics must stay unchanged, ms. */
  readonly quietMs: number;
}

export interface CutoverResult {
  readonly drain: DrainReport;
  readonly state: StoreCopy[];
  readonly tables: TableCopy[];
}

/** The generations are not ready for the cut-over (the old one still working, the new one not prepared); `reasons` say what to do. */
export class NotDrainedError extends PushError {
  constructor(readonly reasons: string[]) {
    super('NOT_DRAINED', `not ready for the cut-over:\n  ${reasons.join('\n  ')}`);
  }
}

export async function cutover(plan: CutoverPlan, endpoints: Endpoints = readEndpoints()): Promise<CutoverResult> {
  const admin = repartitionAdmin(endpoints);
  await admin.connect();
  let drain: DrainReport;
  try {
    const counts = await partitionCounts(admin, generationTopics(plan.to));
    const unprepared = generationTopics(plan.to).filter((t) => counts.get(t) !== plan.partitions);
    if (unprepared.length > 0)
      throw new NotDrainedError([
        `the new generation is not prepared with ${plan.partitions} partitions (${unprepared.join(', ')}): run pushctl repartition prepare`,
      ]);
    drain = await checkDrained(admin, plan.from, plan.quietMs);
  } finally {
    await admin.disconnect();
  }
  if (!drained(drain)) throw new NotDrainedError(describeDrain(drain));
  const state = await copyState(plan.from, plan.to, plan.partitions, endpoints);
  const tables = await copyTables(plan.from, plan.to, endpoints);
  return { drain, state, tables };
}
