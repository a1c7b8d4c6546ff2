import { WebSocket } from 'ws';
import { expect } from 'vitest';
import type { ProjectClient } from './server.js';

/** A `ws` client of a server's `/ws/subscriptions-r4`, keeping what it received in order. */
export interface TestSocket {
  readonly socket: WebSocket;
  /** Every message received, parsed. */
  readonly received: any[];
  /** The next message not yet taken by next(); fails after `withinMs`. */
  next(withinMs?: number): Promise<any>;
  send(message: unknown): void;
  /** Resolves with the close code once the server closed the socket. */
  readonly closed: Promise<number>;
  close(): void;
}

export function webSocketUrl(serverUrl: string): string {
  return `${serverUrl.replace(/^http/, 'ws')}/ws/subscriptions-r4`;
}

export async function openSocket(serverUrl: string): Promise<TestSocket> {
  const socket = new WebSocket(webSocketUrl(serverUrl));
  const received: any[] = [];
  let taken = 0;
  const waiters: (() => void)[] = [];
  socket.on('message', (data) => {
    received.push(JSON.parse(String(data)));
    for (const wake of waiters.splice(0)) wake();
  });
  const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  const next = async (withinMs = 5_000): Promise<any> => {
    const deadline = Date.now() + withinMs;
    while (received.length <= taken) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no message within ${withinMs} ms (received ${received.length})`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return received[taken++];
  };
  return { socket, received, next, send: (message) => socket.send(JSON.stringify(message)), closed, close: () => socket.close() };
}

/** A websocket Subscription of `client` with `criteria`; returns its id. */
export async function websocketSubscription(client: ProjectClient, criteria: string): Promise<string> {
  const res = await client.post('/Subscription', { resourceType: 'Subscription', status: 'active', reason: 'test', criteria, channel: { type: 'websocket' } });
  expect(res.status).toBe(201);
  return res.body.id;
}

/** A binding token of the Subscription, from `$get-ws-binding-token`. */
export async function bindingToken(client: ProjectClient, subscriptionId: string): Promise<string> {
  const res = await client.get(`/Subscription/${subscriptionId}/$get-ws-binding-token`);
  expect(res.status).toBe(200);
  return res.body.parameter.find((p: { name: string }) => p.name === 'token').valueString;
}

/** Opens a socket, binds it to the Subscription and takes the handshake. */
export async function boundSocket(serverUrl: string, client: ProjectClient, subscriptionId: string): Promise<TestSocket> {
  const socket = await openSocket(serverUrl);
  socket.send({ type: 'bind-with-token', payload: { token: await bindingToken(client, subscriptionId) } });
  const handshake = await socket.next();
  expect(handshake.entry[0].resource.type).toBe('handshake');
  return socket;
}
