import type { PipelineMetrics } from '../../sinks/metrics/pipeline-metrics.ts';
import type { VendorRegistry } from '../../sinks/vendors/registry.ts';
import type { VendorAdapter } from '../../processors/fan-out/vendor-port.ts';
import type { ValueSerdes } from '../serdes.ts';

/**
 * The registry serdes, with the records a stage produces to push.outcomes, push.dispatch and push.receipts counted
 * into the worker's metrics on the way out (serialize runs once per produced record).
 */
export function meteredSerdes(base: ValueSerdes, metrics: PipelineMetrics): ValueSerdes {
  const observers: Partial<Record<Parameters<ValueSerdes>[0], (value: never) => void>> = {
    outcomes: (o) => metrics.observeOutcome(o),
    dispatch: (d) => metrics.observeDispatch(d),
    receipts: (r) => metrics.observeReceipt(r),
  };
  return (key) => {
    const serde = base(key);
    const observe = observers[key];
    if (!observe) return serde;
    return {
      serialize: (topic, value) => {
        observe(value as never);
        return serde.serialize(topic, value);
      },
      deserialize: (topic, data) => serde.deserialize(topic, data),
    };
  };
}

/** The vendor registry with every submit call timed and every per-message answer counted by kind and code. */
export function meteredVendors(vendors: VendorRegistry, metrics: PipelineMetrics): VendorRegistry {
  // Weak: the adapters of an app replaced by a reload (ReloadableVendorRegistry) are let go.
  const wrapped = new WeakMap<VendorAdapter, VendorAdapter>();
  const meter = (adapter: VendorAdapter, appId: string): VendorAdapter => {
    let m = wrapped.get(adapter);
    if (!m) {
      m = {
        vendor: adapter.vendor,
        maxPayloadBytes: adapter.maxPayloadBytes,
        maxBatchSize: adapter.maxBatchSize,
        payloadBytes: (message) => adapter.payloadBytes(message),
        parseReceipt: (body, contentType) => adapter.parseReceipt(body, contentType),
        close: () => adapter.close(),
        submit: async (messages) => {
          const started = performance.now();
          const outcomes = await adapter.submit(messages);
          metrics.vendorLatency.observe({ vendor: adapter.vendor }, performance.now() - started);
          for (const o of outcomes) metrics.vendorResults.inc({ vendor: adapter.vendor, app: appId, kind: o.kind, code: o.kind === 'accepted' ? '' : o.code });
          return outcomes;
        },
      };
      wrapped.set(adapter, m);
    }
    return m;
  };
  return {
    adapter: (vendor, appId) => {
      const adapter = vendors.adapter(vendor, appId);
      return adapter && meter(adapter, appId);
    },
    limits: (vendor, appId) => vendors.limits(vendor, appId),
    hasApp: (appId) => vendors.hasApp(appId),
    receiptParser: (vendor) => vendors.receiptParser(vendor),
    close: () => vendors.close(),
  };
}
