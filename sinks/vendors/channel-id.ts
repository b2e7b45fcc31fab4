import type { PushMessage } from '../../processors/fan-out/vendor-port.ts';

/**
 * The notification channel (Xiaomi `extra.channel_id`, OPPO `channel_id`) of a message: the app's
 * marketing channel for a push classed `channel: marketing` when the apps file names one, else its
 * IM / communication channel.
 */
export function channelOf(m: Pick<PushMessage, 'classification'>, config: { readonly channelId: string; readonly marketingChannelId?: string }): string {
  return m.classification?.channel === 'marketing' ? (config.marketingChannelId ?? config.channelId) : config.channelId;
}
