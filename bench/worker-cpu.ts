/**
 * The worker-CPU figures the bench reads off its load steps: the headline figures of the sustained
 * step, the Kafka client's floor under them, the CPU above what idle workers burn, and what each
 * further message costs between steps (docs/design.md, "Targets").
 */
import type { ClientCpu } from './ceilings.ts';
import type { StepResult } from './steps.ts';

/** The headline figures of one step (the sustained one). */
export interface AtRate {
  readonly step: string;
  /** Worker CPU per persisted message, ms (gross). */
  readonly workerCpuMsPerMessage: number;
  /** The same with the idle workers' burn over the span subtracted; null when not positive. */
  readonly workerCpuMsPerMessageAboveIdle: number | null;
  /** The event-path workers' part of the gross figure; null when one worker ran every stage. */
  readonly eventPathWorkerCpuMsPerMessage: number | null;
  /** From the workers' counters (null when their /metrics did not answer). */
  readonly recordsProducedPerMessage: number | null;
  readonly recordsFetchedPerMessage: number | null;
  readonly commitsPerSecond: number | null;
  readonly commitsPerSecondByApp: Readonly<Record<string, number>> | null;
  readonly gcShareOfWorkerCpu: number | null;
}

export function atRate(step: StepResult, idleMsPerSecond: number): AtRate {
  const above = aboveIdle(step, idleMsPerSecond);
  const b = step.breakdown;
  return {
    step: step.label,
    workerCpuMsPerMessage: step.workerCpuMsPerMessage,
    workerCpuMsPerMessageAboveIdle: above === 'n/a' ? null : Math.round(above) / 1000,
    eventPathWorkerCpuMsPerMessage: step.eventPathWorkerCpuMsPerMessage,
    recordsProducedPerMessage: b?.recordsProducedPerMessage ?? null,
    recordsFetchedPerMessage: b?.recordsFetchedPerMessage ?? null,
    commitsPerSecond: b?.commitsPerSecond ?? null,
    commitsPerSecondByApp: b?.commitsPerSecondByApp ?? null,
    gcShareOfWorkerCpu: b?.gcShareOfWorkerCpu ?? null,
  };
}

/**
 * What kafkajs alone costs the workers per persisted message at the sustained rate: its records
 * produced × a produce plus records fetched × a consume, at the ceilings' CPU per record (bench/ceilings.ts).
 * A lower bound of the worker CPU per message: no transaction, no processing, no vendor call in it.
 */
export function clientFloorMsPerMessage(cpu: ClientCpu, at: AtRate | null): number | null {
  if (!at || at.recordsProducedPerMessage === null || at.recordsFetchedPerMessage === null) return null;
  const us = at.recordsProducedPerMessage * cpu.produceUsPerRecord + at.recordsFetchedPerMessage * cpu.consumeUsPerRecord;
  return Math.round(us) / 1000;
}

/** Worker CPU per 1,000 persisted messages beyond what the idle workers burn over the same span. */
export function aboveIdle(step: StepResult, idleMsPerSecond: number): number | 'n/a' {
  const above = step.workerCpuMs - idleMsPerSecond * step.cpuSeconds;
  if (step.persistedMessages === 0 || above <= 0) return 'n/a';
  return Math.round((above / step.persistedMessages) * 1000 * 10) / 10;
}

/**
 * Worker CPU per further message between consecutive steps that kept up, in rate order: what one
 * more message costs once the cycles the workers run whatever the load are paid (docs/design.md,
 * "Targets"). Steps charge their CPU up to the end of their drain, so the figure is good only
 * between steps of the same length. The run's first step is left out: it also carries the
 * population's setup records and the workers' warm-up.
 */
export function marginalWorkerCpu(steps: readonly StepResult[]): Array<{ from: number; to: number; msPerMessage: number }> {
  const kept = steps
    .slice(1)
    .filter((s) => s.sustained && s.persistedMessages > 0)
    .sort((a, b) => a.offeredRate - b.offeredRate);
  const out: Array<{ from: number; to: number; msPerMessage: number }> = [];
  for (let i = 1; i < kept.length; i++) {
    const [a, b] = [kept[i - 1]!, kept[i]!];
    if (b.persistedMessages <= a.persistedMessages) continue;
    const msPerMessage = Math.round(((b.workerCpuMs - a.workerCpuMs) / (b.persistedMessages - a.persistedMessages)) * 100) / 100;
    out.push({ from: a.offeredRate, to: b.offeredRate, msPerMessage });
  }
  return out;
}
