import type { Topology } from '../../topology/builder.ts';
import { StreamTask, type ProcessingErrorPolicy } from '../../topology/task.ts';

/**
 * One task of `topology` on partition 0, run in-process without a broker (a restore, a punctuation,
 * a flush, stepped by hand): sub-topology 0 unless `subtopology` says which, processing errors
 * failing it unless `policy` says otherwise, changelogs named after `applicationId`.
 */
export function standaloneTask(
  topology: Topology,
  applicationId: string,
  clock: () => number,
  options: { readonly subtopology?: Topology['subtopologies'][number]; readonly policy?: ProcessingErrorPolicy; readonly dlqTopic?: string } = {},
): StreamTask {
  return new StreamTask({
    applicationId,
    topology,
    subtopology: options.subtopology ?? topology.subtopologies[0]!,
    partition: 0,
    clock,
    dlqTopic: options.dlqTopic ?? 'dlq',
    processingErrorPolicy: options.policy ?? 'fail',
    changelogTopic: (store) => `${applicationId}-${store}-changelog`,
  });
}
