import { randomUUID } from 'node:crypto';
import { MedplumClient, type SubscriptionEmitter } from '@medplum/core';
import { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';

/**
 * Medplum's own client subscribing as its documentation shows (`subscribeToCriteria`): it creates
 * the websocket Subscription, asks `$get-ws-binding-token`, binds, pings, and hands each
 * notification Bundle to its listeners.
 */
const api = await useTestServer();

// The client's SubscriptionManager uses the global WebSocket, which Node 20 lacks: `ws` stands in
// while this file runs (its worker runs other files after it).
const globals = globalThis as { WebSocket?: unknown };
const hadWebSocket = 'WebSocket' in globals;
beforeAll(() => {
  if (!hadWebSocket) globals.WebSocket = WebSocket;
});
afterAll(() => {
  if (!hadWebSocket) delete globals.WebSocket;
});

function nextEvent(emitter: SubscriptionEmitter, type: 'connect' | 'message'): Promise<any> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${type} event`)), 10_000);
    emitter.addEventListener(type, (event: { payload: unknown }) => {
      clearTimeout(timer);
      resolve(event.payload);
    });
  });
}

describe('MedplumClient.subscribeToCriteria', () => {
  it('receives the resources created that match its criteria', async () => {
    const project = api.newProject();
    const { clientId, clientSecret } = await api.credentialsOf(project);
    const medplum = new MedplumClient({ baseUrl: `${api.url}/`, fetch, cacheTime: 0 });
    await medplum.startClientLogin(clientId, clientSecret);
    const code = randomUUID();
    const emitter = medplum.subscribeToCriteria(`Observation?code=${code}`);
    try {
      await nextEvent(emitter, 'connect');
      const message = nextEvent(emitter, 'message');
      const created = await medplum.createResource({ resourceType: 'Observation', status: 'final', code: { coding: [{ system: 'http://loinc.org', code }] } });
      const bundle = await message;
      expect(bundle.entry[1].resource.id).toBe(created.id);
    } finally {
      medplum.getSubscriptionManager().closeWebSocket();
    }
  }, 60_000);
});
