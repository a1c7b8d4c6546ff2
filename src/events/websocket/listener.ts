import type { Logger } from 'pino';
import type { ChannelListener } from '../change-batch.js';
import type { WebSocketHub } from './hub.js';

/**
 * The matcher's listener for websocket Subscriptions: the matches of one version (announced one
 * Subscription at a time, all within one turn of the matcher) become one notice to every server,
 * so a server holding sockets reads the version once, however many of its Subscriptions matched.
 */
export function webSocketListener(hub: WebSocketHub, log: Logger): ChannelListener {
  const pending = new Map<string, string[]>();
  return (subscription, version) => {
    const { projectId, resourceType, id, versionId, interaction } = version.change;
    const key = `${resourceType}/${id}/${versionId}`;
    const ids = pending.get(key);
    if (ids) {
      ids.push(subscription.id!);
      return;
    }
    const first = [subscription.id!];
    pending.set(key, first);
    queueMicrotask(() => {
      pending.delete(key);
      hub.publish({ projectId, resourceType, resourceId: id, versionId, interaction }, first).catch((error: unknown) =>
        log.warn({ err: error, version: key }, 'websocket subscription event not announced'),
      );
    });
  };
}
