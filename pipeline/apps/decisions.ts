/**
 * Wiring of the decision stages (docs/design.md, "Topology", "online-filter", "merge" and "policy")
 * into one topology with ONE sub-topology:
 *
 *   im.message.persisted ─ ingest ─┐
 *   im.presence ────────── ingest ─┼─► online-filter ─► merge ─► policy ─► push.dispatch
 *   push.tokens ────────── ingest ─┤         │            │        ▲   └──► push.outcomes (every stage)
 *   push.settings ──────── ingest ─┴─────────┼────────────┼────────┘
 *                                            ▼ (tap)      ▼ (tap)
 *                                     push.candidates  push.merged      (only with `taps`)
 *
 * Each source feeds an ingest node (processors/model/inputs.ts) that checks its topic's records
 * once and hands the stages tagged values; the merge's notifications are tagged for the policy by
 * `merged-in`.
 *
 * Every input is keyed by uid and so is every output; the merge keys its windows by (uid, conv_id)
 * inside the uid's task, which needs no repartition. So, as in Kafka Streams, the three processors
 * run fused in one task per partition and forward in-process: one exactly-once transaction between
 * the persisted message and its dispatch instead of three topic hops. push.candidates and push.merged
 * stay Avro topics as optional taps (`taps`, PUSH_DECISION_TAPS) for audit and debugging; nothing
 * reads them. Node and store names are stable: store names name the changelog topics (each stage's
 * supplier declares its stores, named by its options: the defaults here). push.tokens and
 * push.settings are compacted and read as tables: their ingest nodes turn a tombstone into a
 * deletion of the user's tokens or settings.
 */
import { TopologyBuilder, type Topology } from '../../topology/builder.ts';
import { onlineFilter } from '../../processors/online-filter/online-filter.ts';
import { onlineFilterOptionsFromEnv, type OnlineFilterOptions } from '../../processors/online-filter/options.ts';
import { merge } from '../../processors/merge/merge.ts';
import { ingest, tagged } from '../../processors/model/inputs.ts';
import { ingestOptionsFromEnv, type IngestOptions } from '../../processors/model/ingest.ts';
import type { PushDispatch, PushMerged } from '../../processors/model/records.ts';
import { mergeOptionsFromEnv, type MergeOptions } from '../../processors/merge/options.ts';
import { policy } from '../../processors/policy/policy.ts';
import { fanOut } from '../../processors/fan-out/fan-out.ts';
import { replaysOnly } from '../../processors/fan-out/replays.ts';
import type { FanOutOptions } from '../../processors/fan-out/options.ts';
import { FAN_OUT_NODES, FAN_OUT_STORES, imFanOut } from './fan-out.ts';
import { VENDOR_CHANNELS } from '../../sinks/vendors/channels.ts';
import { policyOptionsFromEnv, type PolicyOptions } from '../../processors/policy/options.ts';
import { readKey, type Env } from '../../common/config.ts';
import { CONFIG_KEYS } from '../../common/config-keys.ts';
import type { TopicKey } from '../topics.ts';
import { leadingUid, uidKey } from '../repartition/store-keys.ts';
import { nothingToClose, placeholder, type StageDefinition } from './stage.ts';
import { topicIo, type WiringOptions } from './wiring.ts';

export interface DecisionsTopologyOptions extends WiringOptions {
  /** The ingest rules every input record is checked against (PUSH_INGEST_*; processors/model/ingest.ts). */
  ingest?: IngestOptions;
  onlineFilter?: Omit<OnlineFilterOptions, 'outputs' | 'stores'>;
  merge?: Omit<MergeOptions, 'outputs' | 'stores'>;
  policy?: Omit<PolicyOptions, 'outputs' | 'stores' | 'ingest'>;
  /**
   * Also write the in-process hand-overs to push.candidates (online-filter → merge) and push.merged
   * (merge → policy), for audit and debugging. Env PUSH_DECISION_TAPS; default false. Costs two
   * records per pushed device in every transaction.
   */
  taps?: boolean;
  /**
   * Runs the IM fan-out in the same task, fused behind the policy (PUSH_FAN_OUT_FUSED): a dispatch is
   * handed to `fan-out` in-process, so it reaches its vendor without waiting for the decisions'
   * commit and costs no push.dispatch record (written only as a tap, with `taps`). The decisions'
   * commit waits for the vendor calls in flight up to `commitWaitMs` (PUSH_FAN_OUT_COMMIT_WAIT_MS),
   * then keeps those still running in the fan-out's parked store (`fused`), so a slow vendor costs
   * the other pushes of its partitions that wait at most; backoffs over `inlineBackoffMaxMs` still
   * park, as in the fan-out application. The fan-out reads the READs of
   * im.presence, as there, and writes push.outcomes and dead-token invalidations on push.tokens.
   */
  fanOut?: Omit<FanOutOptions, 'outputs' | 'fused'>;
}

/** Fused: where `pushctl replay`'s dispatches come in. */
const REPLAY_NODES = { source: 'replay-source', filter: 'replays' } as const;

/** The topics the decision stages read (sources; dispatch for replays, fused) and write (sink nodes; candidates and merged only as taps). */
export const DECISION_TOPICS = {
  reads: ['persisted', 'presence', 'tokens', 'settings', 'dispatch'],
  writes: ['dispatch', 'outcomes', 'candidates', 'merged'],
} as const satisfies { reads: readonly TopicKey[]; writes: readonly TopicKey[] };

/** Builds the decisions topology. Processor options are validated here (ConfigError naming the PUSH_* key). */
export function buildDecisionsTopology(options: DecisionsTopologyOptions): Topology {
  const { source, sink } = topicIo(options);
  const tapped = (child: string, tap: string): string[] => (options.taps ? [child, tap] : [child]);
  const fused = options.fanOut;
  const b = new TopologyBuilder()
    .addSource('persisted-source', source('persisted'))
    .addSource('presence-source', source('presence'))
    .addSource('tokens-source', source('tokens'))
    .addSource('settings-source', source('settings'))
    .addProcessor('persisted-ingest', ingest('message', options.ingest), 'persisted-source')
    .addProcessor('presence-ingest', ingest('presence', options.ingest), 'presence-source')
    .addProcessor('tokens-ingest', ingest('token', options.ingest), 'tokens-source')
    .addProcessor('settings-ingest', ingest('settings', options.ingest), 'settings-source')
    .addProcessor(
      'online-filter',
      onlineFilter({ ...options.onlineFilter, outputs: { candidates: tapped('merge', 'candidates-tap'), outcomes: 'outcomes-sink' } }),
      'persisted-ingest',
      'presence-ingest',
      'tokens-ingest',
    )
    .addProcessor('merge', merge({ ...options.merge, outputs: { merged: tapped('merged-in', 'merged-tap'), outcomes: 'outcomes-sink' } }), 'online-filter')
    .addProcessor('merged-in', tagged<'merged', PushMerged>('merged'), 'merge')
    .addProcessor(
      'policy',
      policy(VENDOR_CHANNELS, {
        ...options.policy,
        ...(options.ingest ? { ingest: options.ingest } : {}),
        outputs: { dispatch: fused ? tapped(FAN_OUT_NODES.dispatchIn, 'dispatch-sink') : ['dispatch-sink'], outcomes: 'outcomes-sink' },
      }),
      'merged-in',
      'settings-ingest',
      'tokens-ingest',
      'presence-ingest',
    );
  if (!fused || options.taps) b.addSink('dispatch-sink', sink('dispatch'), 'policy');
  if (fused) {
    const n = FAN_OUT_NODES;
    // Replays (`pushctl replay`) still arrive on push.dispatch.
    b.addSource(REPLAY_NODES.source, source('dispatch'))
      .addProcessor(REPLAY_NODES.filter, replaysOnly(), REPLAY_NODES.source)
      .addProcessor(n.dispatchIn, tagged<'dispatch', PushDispatch>('dispatch'), 'policy', REPLAY_NODES.filter)
      .addProcessor(n.processor, fanOut({ ...fused, fused: true, outputs: { outcomes: 'outcomes-sink', tokens: n.tokens } }), n.dispatchIn, 'presence-ingest')
      .addSink(n.tokens, sink('tokens'), n.processor)
      .addSink('outcomes-sink', sink('outcomes'), 'online-filter', 'merge', 'policy', n.processor);
  } else b.addSink('outcomes-sink', sink('outcomes'), 'online-filter', 'merge', 'policy');
  if (options.taps) b.addSink('candidates-tap', sink('candidates'), 'online-filter').addSink('merged-tap', sink('merged'), 'merge');
  return b.build();
}

/**
 * The stages' options from PUSH_* environment keys (PUSH_HOLD_WINDOW_MS, PUSH_HEARTBEAT_TIMEOUT_MS,
 * PUSH_BACKGROUND_COOLDOWN_MS, PUSH_MERGE_WINDOW_MS, PUSH_MERGE_MODE, PUSH_MERGE_RETENTION_MS,
 * PUSH_MENTION_RULE, PUSH_MENTION_ALL, PUSH_GENERIC_TITLE, PUSH_GENERIC_TEXT, PUSH_VENDOR_QUOTAS,
 * PUSH_PARTITIONS, PUSH_QUOTA_TIME_ZONE, PUSH_DECISION_TAPS, PUSH_INGEST_MAX_PAST_SKEW_MS,
 * PUSH_INGEST_MAX_FUTURE_SKEW_MS). A bad value throws a ConfigError naming its key.
 */
export function decisionsOptionsFromEnv(env: Env = process.env): Pick<DecisionsTopologyOptions, 'ingest' | 'onlineFilter' | 'merge' | 'policy' | 'taps'> {
  return {
    ingest: ingestOptionsFromEnv(env),
    onlineFilter: onlineFilterOptionsFromEnv(env),
    merge: mergeOptionsFromEnv(env),
    policy: policyOptionsFromEnv(env),
    taps: readKey(env, CONFIG_KEYS.PUSH_DECISION_TAPS),
  };
}

/**
 * The decisions application: on the event path, committing as soon as it has caught up, with the
 * IM fan-out fused behind its policy unless PUSH_FAN_OUT_FUSED=false.
 */
export const decisionsStage: StageDefinition<'decisions'> = {
  name: 'decisions',
  commitLane: 'event-path',
  commitWhenCaughtUp: true,
  stores: {
    'online-filter-devices': uidKey,
    // compositeKey(uid, device_id)
    'online-filter-presence': leadingUid,
    // compositeKey(uid, device_id, conv_id)
    'online-filter-holds': leadingUid,
    // compositeKey(uid, conv_id): the open merge windows (their timers are rebuilt from them)
    'merge-windows': leadingUid,
    'policy-tokens': uidKey,
    'policy-settings': uidKey,
    // compositeKey(vendor, app, day) → pushes sent on that day by this partition, against daily / N
    'policy-quota-ledger': { kind: 'per-partition', combine: 'shareOfSum' },
    // compositeKey(uid, device_id, conv_id), for the deferred pushes and their release timers
    'policy-deferred': leadingUid,
    'policy-deferred-timers': leadingUid,
    // With the fan-out fused behind the policy (PUSH_FAN_OUT_FUSED)
    ...FAN_OUT_STORES,
  },
  // Fused, so with the fan-out's stores too.
  inspect: (wiring) => buildDecisionsTopology({ ...wiring, fanOut: { vendors: placeholder(), ledger: placeholder() } }),
  build(ctx, wiring) {
    const options = decisionsOptionsFromEnv(ctx.env);
    const merge = { ...options.merge, listener: ctx.metrics.mergeListener };
    // Fused, a dispatch is never serialized unless tapped: it is counted (push_dispatches_total, the
    // persisted → decided segment) as the fan-out takes it, which is also when it was decided.
    const fused = readKey(ctx.env, CONFIG_KEYS.PUSH_FAN_OUT_FUSED) ? imFanOut(ctx, !options.taps) : undefined;
    return {
      close: fused?.close ?? nothingToClose,
      topology: buildDecisionsTopology({ ...wiring, ...options, merge, ...(fused ? { fanOut: fused.options } : {}) }),
    };
  },
};
