import { randomUUID } from 'node:crypto';
import { WebSocket } from 'ws';
import { afterEach, describe, expect, it } from 'vitest';
import { signBindingToken } from '../../src/events/websocket/binding-token.js';
import { useTestServer } from '../helpers/server.js';
import { bindingToken, boundSocket, openSocket, webSocketUrl, websocketSubscription, type TestSocket } from '../helpers/websocket.js';

const api = await useTestServer({
  WS_MAX_CONNECTIONS: '8',
  WS_MAX_CONNECTIONS_PER_PROJECT: '2',
  WS_MAX_BINDINGS_PER_SOCKET: '2',
  WS_BIND_TIMEOUT_MS: '1500',
});

const sockets: TestSocket[] = [];
// Waits for the closes, so that the next test's sockets find their places free.
afterEach(() =>
  Promise.all(
    sockets.splice(0).map((socket) => {
      socket.close();
      return socket.closed;
    }),
  ),
);
async function track(socket: Promise<TestSocket>): Promise<TestSocket> {
  const opened = await socket;
  sockets.push(opened);
  return opened;
}

const observation = (code: string) => ({ resourceType: 'Observation', status: 'final', code: { coding: [{ system: 'http://loinc.org', code }] } });

describe('$get-ws-binding-token', () => {
  it('answers Medplum\'s Parameters: token, expiration, subscription and websocket-url', async () => {
    const client = api.newProject();
    const id = await websocketSubscription(client, 'Observation');
    const res = await client.get(`/Subscription/${id}/$get-ws-binding-token`);
    expect(res.status).toBe(200);
    const byName = Object.fromEntries(res.body.parameter.map((p: { name: string }) => [p.name, p]));
    expect(typeof byName.token.valueString).toBe('string');
    expect(Date.parse(byName.expiration.valueDateTime)).toBeGreaterThan(Date.now());
    expect(byName.subscription.valueString).toBe(`Subscription/${id}`);
    expect(byName['websocket-url'].valueUrl).toBe('ws://localhost/ws/subscriptions-r4');
  });

  it('is a GraphQL field too, whose token binds', async () => {
    const client = api.newProject();
    const id = await websocketSubscription(client, 'Observation');
    const res = await api.raw('/fhir/R4/$graphql', {
      method: 'POST',
      headers: { ...(await client.authHeaders()), 'Content-Type': 'application/json' },
      body: JSON.stringify({ query: `{ SubscriptionGetWsBindingToken(id: "${id}") { token subscription websocket_url } }` }),
    });
    const { data } = await res.json();
    expect(data.SubscriptionGetWsBindingToken.subscription).toBe(`Subscription/${id}`);
    const socket = await track(openSocket(api.url));
    socket.send({ type: 'bind-with-token', payload: { token: data.SubscriptionGetWsBindingToken.token } });
    expect((await socket.next()).entry[0].resource.type).toBe('handshake');
  });

  it('is 404 for a Subscription of another project', async () => {
    const owner = api.newProject();
    const id = await websocketSubscription(owner, 'Observation');
    const res = await api.newProject().get(`/Subscription/${id}/$get-ws-binding-token`);
    expect(res.status).toBe(404);
  });

  it('refuses a rest-hook Subscription', async () => {
    const client = api.newProject();
    const res = await client.post('/Subscription', { resourceType: 'Subscription', status: 'active', reason: 'test', criteria: 'Observation', channel: { type: 'rest-hook', endpoint: 'https://example.com/hook' } });
    const answer = await client.get(`/Subscription/${res.body.id}/$get-ws-binding-token`);
    expect(answer.status).toBe(400);
    expect(answer.body.issue[0].expression).toEqual(['Subscription.channel.type']);
  });

  it('is not accepted as a bearer token', async () => {
    const client = api.newProject();
    const token = await bindingToken(client, await websocketSubscription(client, 'Observation'));
    const res = await api.raw('/fhir/R4/Observation', { headers: { Authorization: `Bearer ${token}` } });
    expect(res.status).toBe(401);
  });
});

describe('/ws/subscriptions-r4', () => {
  it('sends a matching create as Medplum does, and not a create that does not match', async () => {
    const client = api.newProject();
    const code = randomUUID();
    const id = await websocketSubscription(client, `Observation?code=${code}`);
    const socket = await track(boundSocket(api.url, client, id));
    expect((await client.post('/Observation', observation(randomUUID()))).status).toBe(201);
    const created = await client.post('/Observation', observation(code));
    const bundle = await socket.next();
    expect(bundle.resourceType).toBe('Bundle');
    expect(bundle.type).toBe('history');
    const status = bundle.entry[0].resource;
    expect(status).toMatchObject({ resourceType: 'SubscriptionStatus', type: 'event-notification', subscription: { reference: `Subscription/${id}` }, eventsSinceSubscriptionStart: '1' });
    expect(status.notificationEvent[0].focus.reference).toBe(`Observation/${created.body.id}`);
    expect(bundle.entry[1].resource.id).toBe(created.body.id);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(socket.received).toHaveLength(2);
  });

  it('sends a resource again on $resend naming the Subscription', async () => {
    const client = api.newProject();
    const code = randomUUID();
    const id = await websocketSubscription(client, `Observation?code=${code}`);
    const socket = await track(boundSocket(api.url, client, id));
    const created = await client.post('/Observation', observation(code));
    await socket.next();
    expect((await client.post(`/Observation/${created.body.id}/$resend`, { subscription: `Subscription/${id}` })).status).toBe(200);
    const again = await socket.next();
    expect(again.entry[0].resource.eventsSinceSubscriptionStart).toBe('2');
    expect(again.entry[1].resource.id).toBe(created.body.id);
  });

  it('answers ping with pong', async () => {
    const socket = await track(openSocket(api.url));
    socket.send({ type: 'ping' });
    expect(await socket.next()).toEqual({ type: 'pong' });
  });

  it('stops sending after unbind-from-token', async () => {
    const client = api.newProject();
    const code = randomUUID();
    const id = await websocketSubscription(client, `Observation?code=${code}`);
    const socket = await openSocket(api.url);
    sockets.push(socket);
    const token = await bindingToken(client, id);
    socket.send({ type: 'bind-with-token', payload: { token } });
    await socket.next();
    socket.send({ type: 'unbind-from-token', payload: { token } });
    socket.send({ type: 'ping' });
    expect(await socket.next()).toEqual({ type: 'pong' });
    await client.post('/Observation', observation(code));
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(socket.received).toHaveLength(2);
  });

  it('refuses an expired token with an OperationOutcome and closes', async () => {
    const client = api.newProject();
    const id = await websocketSubscription(client, 'Observation');
    const { token } = await signBindingToken(api.server.services.auth.keys, api.server.services.config.baseUrl, { subscriptionId: id, projectId: client.projectId }, -60);
    const socket = await track(openSocket(api.url));
    socket.send({ type: 'bind-with-token', payload: { token } });
    const refusal = await socket.next();
    expect(refusal.resourceType).toBe('OperationOutcome');
    expect(refusal.issue[0].details.text).toContain('expired');
    expect(await socket.closed).toBe(1008);
  });

  it('refuses an unknown token and a malformed message', async () => {
    const unknown = await track(openSocket(api.url));
    unknown.send({ type: 'bind-with-token', payload: { token: 'not-a-token' } });
    expect((await unknown.next()).resourceType).toBe('OperationOutcome');
    expect(await unknown.closed).toBe(1008);
    const garbage = await track(openSocket(api.url));
    garbage.socket.send('{"type":');
    expect((await garbage.next()).issue[0].code).toBe('invalid');
    expect(await garbage.closed).toBe(1008);
  });

  it('refuses a token of another project on a socket bound in one project', async () => {
    const one = api.newProject();
    const other = api.newProject();
    const socket = await track(boundSocket(api.url, one, await websocketSubscription(one, 'Observation')));
    socket.send({ type: 'bind-with-token', payload: { token: await bindingToken(other, await websocketSubscription(other, 'Observation')) } });
    expect((await socket.next()).issue[0].details.text).toContain('another project');
  });

  it('refuses a token whose Subscription was turned off since', async () => {
    const client = api.newProject();
    const id = await websocketSubscription(client, 'Observation');
    const token = await bindingToken(client, id);
    const current = await client.get(`/Subscription/${id}`);
    expect((await client.put(`/Subscription/${id}`, { ...current.body, status: 'off' })).status).toBe(200);
    const socket = await track(openSocket(api.url));
    socket.send({ type: 'bind-with-token', payload: { token } });
    expect((await socket.next()).issue[0].details.text).toContain('no longer an active websocket Subscription');
  });

  it('closes a socket that binds nothing within WS_BIND_TIMEOUT_MS', async () => {
    const socket = await track(openSocket(api.url));
    expect((await socket.next(5_000)).resourceType).toBe('OperationOutcome');
    expect(await socket.closed).toBe(1008);
  });
});

describe('WebSocket limits', () => {
  it('binds at most WS_MAX_BINDINGS_PER_SOCKET Subscriptions on one socket', async () => {
    const client = api.newProject();
    const socket = await track(boundSocket(api.url, client, await websocketSubscription(client, 'Observation')));
    socket.send({ type: 'bind-with-token', payload: { token: await bindingToken(client, await websocketSubscription(client, 'Patient')) } });
    expect((await socket.next()).entry[0].resource.type).toBe('handshake');
    socket.send({ type: 'bind-with-token', payload: { token: await bindingToken(client, await websocketSubscription(client, 'Encounter')) } });
    expect((await socket.next()).issue[0].details.text).toContain('at most 2');
  });

  it('holds at most WS_MAX_CONNECTIONS_PER_PROJECT sockets of one project', async () => {
    const client = api.newProject();
    const id = await websocketSubscription(client, 'Observation');
    await track(boundSocket(api.url, client, id));
    await track(boundSocket(api.url, client, id));
    const third = await track(openSocket(api.url));
    third.send({ type: 'bind-with-token', payload: { token: await bindingToken(client, id) } });
    expect((await third.next()).issue[0].code).toBe('throttled');
    // Another project still gets its place.
    const other = api.newProject();
    await track(boundSocket(api.url, other, await websocketSubscription(other, 'Observation')));
  });

  it('answers 503 to upgrades once unbound sockets hold a quarter of WS_MAX_CONNECTIONS', async () => {
    await track(openSocket(api.url));
    await track(openSocket(api.url));
    const status = await new Promise<number>((resolve, reject) => {
      const socket = new WebSocket(webSocketUrl(api.url));
      socket.once('unexpected-response', (_request, response) => resolve(response.statusCode ?? 0));
      socket.once('open', () => reject(new Error('the third unbound socket was accepted')));
      socket.once('error', () => undefined);
    });
    expect(status).toBe(503);
  });

  it('answers 404 to upgrades of other paths', async () => {
    const status = await new Promise<number>((resolve) => {
      const socket = new WebSocket(`${api.url.replace(/^http/, 'ws')}/ws/other`);
      socket.once('unexpected-response', (_request, response) => resolve(response.statusCode ?? 0));
      socket.once('error', () => undefined);
    });
    expect(status).toBe(404);
  });
});
