import type { Logger } from 'pino';
import type { AuthService } from '../auth/service.js';
import type { InvalidationBus } from '../cache/invalidation.js';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import type { StorageServices } from '../storage/repository.js';
import { ActiveSubscriptions } from './active-subscriptions.js';
import type { AuthorViewers } from './author-access.js';
import type { ChannelListener } from './change-batch.js';
import { SubscriptionChangeLog } from './change-log.js';
import { EventWorker, type BotDelivery } from './worker.js';
import { WebSocketHub } from './websocket/hub.js';
import type { Foreground } from './yielding.js';
import { webSocketListener } from './websocket/listener.js';

export interface Events {
  /** What the repository records every write with (StorageServices.changeLog). */
  readonly changeLog: SubscriptionChangeLog;
  /** Each project's active Subscriptions, as this server holds them. */
  readonly subscriptions: ActiveSubscriptions;
  /** Matches for Subscriptions of `channelType` (other than rest-hook) go to `listener`; before deliverWith. */
  onMatch(channelType: string, listener: ChannelListener): void;
  /**
   * Starts this server's workers, which read and write resources with `storage`, deliver only what
   * each Subscription's author may see (`authors`), and yield to `foreground`'s requests.
   */
  deliverWith(workers: WorkerServices): EventWorker;
  /** The sockets of websocket Subscriptions this server holds; set by deliverWith. */
  readonly webSockets: WebSocketHub | undefined;
  close(): Promise<void>;
}

export interface WorkerServices {
  readonly storage: StorageServices;
  readonly auth: AuthService;
  readonly authors: AuthorViewers;
  readonly botDelivery?: BotDelivery;
  readonly foreground?: Foreground;
}

/** Subscriptions of one server: the change log first (storage needs it), the workers once storage exists. */
export function startEvents(db: Database, config: Config, log: Logger, bus: InvalidationBus): Events {
  let worker: EventWorker | undefined;
  let webSockets: WebSocketHub | undefined;
  const subscriptions = new ActiveSubscriptions(config);
  subscriptions.listen(bus);
  const channels = new Map<string, ChannelListener>();
  const changeLog = new SubscriptionChangeLog(subscriptions, () => worker?.kick());
  return {
    changeLog,
    subscriptions,
    onMatch: (channelType, listener) => void channels.set(channelType, listener),
    deliverWith({ storage, auth, authors, botDelivery, foreground }) {
      const workerLog = log.child({ component: 'subscriptions' });
      const hub = new WebSocketHub(bus, storage, config, workerLog);
      webSockets = hub;
      channels.set('websocket', webSocketListener(hub, workerLog));
      worker = new EventWorker(db, storage, auth, config, subscriptions, channels, authors, workerLog, botDelivery, foreground);
      worker.start();
      return worker;
    },
    get webSockets() {
      return webSockets;
    },
    close: async () => {
      webSockets?.close();
      await worker?.close();
    },
  };
}
