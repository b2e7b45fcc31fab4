import type { PushMessage } from '../../processors/fan-out/vendor-port.ts';

/**
 * Splits a submit call into vendor requests: messages whose vendor payload is identical (apart from
 * the token) share one multi-token request, up to `maxTokens`; the rest go alone. Returns the
 * indices (into `messages`) of each request's messages, in order.
 */
export function groupByPayload(messages: readonly PushMessage[], payloadKey: (m: PushMessage) => string, maxTokens: number): number[][] {
  const groups = new Map<string, number[][]>();
  messages.forEach((m, i) => {
    const key = payloadKey(m);
    const chunks = groups.get(key) ?? [];
    const last = chunks.at(-1);
    if (last && last.length < maxTokens) last.push(i);
    else chunks.push([i]);
    groups.set(key, chunks);
  });
  return [...groups.values()].flat();
}
