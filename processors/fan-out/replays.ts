import type { Processor, ProcessorContext, ProcessorSupplier, StreamRecord } from '../../topology/api.ts';
import type { PushDispatch } from '../model/records.ts';
import { REPLAY_HEADER } from './fan-out.ts';

/**
 * Passes on only the dispatches an operator re-submits (`pushctl replay`, REPLAY_HEADER) from
 * push.dispatch. With the fan-out fused behind the decisions, push.dispatch is not its input: it
 * contains those replays and, with taps on, the decisions' own dispatches, which the fan-out already
 * has in-process and must not send twice.
 */
export function replaysOnly(): ProcessorSupplier<string, PushDispatch, string, PushDispatch> {
  return () => new ReplaysOnly();
}

class ReplaysOnly implements Processor<string, PushDispatch, string, PushDispatch> {
  private ctx!: ProcessorContext<string, PushDispatch>;

  init(context: ProcessorContext<string, PushDispatch>): void {
    this.ctx = context;
  }

  process(record: StreamRecord<string, PushDispatch>): void {
    if (record.headers?.[REPLAY_HEADER]) this.ctx.forward(record);
  }
}
