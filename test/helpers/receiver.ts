import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll } from 'vitest';

/** One request a receiver got. */
export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * A real HTTP receiver on loopback for rest-hook deliveries: records every request and answers
 * with the next status of `statuses` (the last one repeats), or never answers when it is 0.
 */
export interface Receiver {
  readonly url: string;
  readonly received: Received[];
  /** Resolves once `count` requests arrived (the tests' own timeout bounds the wait). */
  waitFor(count: number): Promise<Received[]>;
  close(): Promise<void>;
}

export async function startReceiver(statuses: number[] = [200]): Promise<Receiver> {
  const received: Received[] = [];
  const waiters: { count: number; resolve: (value: Received[]) => void }[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const status = statuses[Math.min(received.length, statuses.length - 1)];
      received.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString() });
      for (const waiter of waiters.filter((w) => received.length >= w.count)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(received.slice());
      }
      if (status === 0) return;
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return {
    url,
    received,
    waitFor: (count) => (received.length >= count ? Promise.resolve(received.slice()) : new Promise((resolve) => waiters.push({ count, resolve }))),
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** A maker of receivers (startReceiver) that are all closed after the calling file's tests. */
export function receiversClosedAfterAll(): (statuses?: number[]) => Promise<Receiver> {
  const started: Receiver[] = [];
  afterAll(() => Promise.all(started.map((r) => r.close())));
  return async (statuses) => {
    const r = await startReceiver(statuses);
    started.push(r);
    return r;
  };
}
