import type { Logger } from 'pino';
import type { InvalidationBus } from '../cache/invalidation.js';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import type { StorageServices } from '../storage/repository.js';
import { SubscriptionChangeLog } from './change-log.js';
import { EventWorker, type BotDelivery } from './worker.js';
import { WebSocketHub } from './websocket/hub.js';

export interface Events {
  /** What the repository records every write with (StorageServices.changeLog). */
  readonly changeLog: SubscriptionChangeLog;
  /** Starts this server's workers, which read and write resources with `storage`. */
  deliverWith(storage: StorageServices, botDelivery?: BotDelivery): EventWorker;
  /** The sockets of websocket Subscriptions this server holds; set by deliverWith. */
  readonly webSockets: WebSocketHub | undefined;
  close(): Promise<void>;
}

/** Subscriptions of one server: the change log first (storage needs it), the workers once storage exists. */
export function startEvents(db: Database, config: Config, log: Logger, bus: InvalidationBus): Events {
  let worker: EventWorker | undefined;
  let webSockets: WebSocketHub | undefined;
  const changeLog = new SubscriptionChangeLog(() => worker?.kick());
  changeLog.listen(bus);
  return {
    changeLog,
    deliverWith(storage, botDelivery) {
      const workerLog = log.child({ component: 'subscriptions' });
      const hub = new WebSocketHub(bus, storage, config, workerLog);
      webSockets = hub;
      worker = new EventWorker(db, storage, config, workerLog, botDelivery, (row, ids) => hub.publish(row, ids));
      worker.start();
      return worker;
    },
    get webSockets() {
      return webSockets;
    },
    close: async () => worker?.close(),
  };
}
