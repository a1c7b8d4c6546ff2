import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { addMemberClient } from '../auth/helpers.js';
import { receiversClosedAfterAll, type Received, type Receiver } from '../helpers/receiver.js';
import { projectClient, useTestServer, type ProjectClient } from '../helpers/server.js';

/**
 * A Subscription delivers only what its author (the membership of the profile that last wrote it)
 * may read now: its AccessPolicy's types and criteria, and the account types hidden from members.
 */
const api = await useTestServer();
const receiver = receiversClosedAfterAll();

const observation = (code: string, status: string) => ({ resourceType: 'Observation', status, code: { coding: [{ system: 'http://loinc.org', code }] } });

/** A member of `admin`'s project under a policy of these rules (Subscriptions are always allowed). */
async function member(admin: ProjectClient, rules: Record<string, unknown>[]): Promise<{ client: ProjectClient; clientId: string }> {
  const policy = await admin.post('/AccessPolicy', { resourceType: 'AccessPolicy', name: 'narrowed', resource: [{ resourceType: 'Subscription' }, ...rules] });
  expect(policy.status).toBe(201);
  const added = await addMemberClient(api, admin, { accessPolicy: `AccessPolicy/${policy.body.id}` });
  return { client: projectClient(api.fhir, admin.projectId, async () => added.token), clientId: added.clientId };
}

async function subscribe(client: ProjectClient, criteria: string, hook: Receiver, extra: Record<string, unknown> = {}): Promise<Record<string, any>> {
  const res = await client.post('/Subscription', {
    resourceType: 'Subscription', status: 'active', reason: 'test', criteria, channel: { type: 'rest-hook', endpoint: hook.url, payload: 'application/fhir+json' }, ...extra,
  });
  expect(res.status).toBe(201);
  return res.body;
}

/** The ids of the resources a receiver got, in order. */
const deliveredIds = (received: readonly Received[]) => received.map((delivery) => JSON.parse(delivery.body).id as string);

/** Deliveries of one change go out together: once the admin's receiver has it, a member's decision was made too. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 300));

describe('subscription deliveries and the author\'s access', () => {
  it('delivers to a member only the Observations its policy criteria let it read', async () => {
    const admin = api.newProject();
    const code = randomUUID();
    const { client } = await member(admin, [{ resourceType: 'Observation', criteria: 'Observation?status=final' }]);
    const [mine, admins] = [await receiver(), await receiver()];
    await subscribe(client, `Observation?code=${code}`, mine);
    await subscribe(admin, `Observation?code=${code}`, admins);
    const preliminary = await admin.post('/Observation', observation(code, 'preliminary'));
    const final = await admin.post('/Observation', observation(code, 'final'));
    await admins.waitFor(2);
    await mine.waitFor(1);
    await settle();
    expect(deliveredIds(admins.received).sort()).toEqual([preliminary.body.id, final.body.id].sort());
    expect(deliveredIds(mine.received)).toEqual([final.body.id]);
  });

  it('delivers nothing of a type the member\'s policy does not allow', async () => {
    const admin = api.newProject();
    const { client } = await member(admin, [{ resourceType: 'Observation' }]);
    const [mine, admins] = [await receiver(), await receiver()];
    await subscribe(client, 'Patient', mine);
    await subscribe(admin, 'Patient', admins);
    await admin.post('/Patient', { resourceType: 'Patient', name: [{ family: 'Hidden' }] });
    await admins.waitFor(1);
    await settle();
    expect(mine.received).toHaveLength(0);
  });

  it('delivers no Login or ProjectMembership to a member, even one whose policy allows every type', async () => {
    const admin = api.newProject();
    const { client } = await member(admin, [{ resourceType: '*' }]);
    const [logins, memberships, admins] = [await receiver(), await receiver(), await receiver()];
    await subscribe(client, 'Login', logins);
    await subscribe(client, 'ProjectMembership', memberships);
    await subscribe(admin, 'ProjectMembership', admins);
    // A new member's membership, and its first token's Login.
    const added = await addMemberClient(api, admin);
    await admins.waitFor(1);
    await settle();
    expect(JSON.parse(admins.received[0].body).profile.reference).toBe(`ClientApplication/${added.clientId}`);
    expect(logins.received).toHaveLength(0);
    expect(memberships.received).toHaveLength(0);
  });

  it('delivers ProjectMembership to a project admin whose policy does not list it', async () => {
    const owner = api.newProject();
    const policy = await owner.post('/AccessPolicy', { resourceType: 'AccessPolicy', name: 'admin', resource: [{ resourceType: 'Subscription' }, { resourceType: 'Patient' }] });
    const { token } = await addMemberClient(api, owner, { admin: true, accessPolicy: `AccessPolicy/${policy.body.id}` });
    const memberships = await receiver();
    await subscribe(projectClient(api.fhir, owner.projectId, async () => token), 'ProjectMembership', memberships);
    const added = await addMemberClient(api, owner);
    await memberships.waitFor(1);
    expect(JSON.parse(memberships.received[0].body).profile.reference).toBe(`ClientApplication/${added.clientId}`);
  });

  it('records the writer as the author, whatever meta.author the body names', async () => {
    const admin = api.newProject();
    const adminSubscription = await subscribe(admin, 'Patient', await receiver());
    const { client, clientId } = await member(admin, [{ resourceType: 'Observation' }]);
    const forged = await subscribe(client, 'Patient', await receiver(), { meta: { author: adminSubscription.meta.author } });
    expect(forged.meta.author).toEqual({ reference: `ClientApplication/${clientId}` });
    expect(adminSubscription.meta.author.reference).not.toBe(`ClientApplication/${clientId}`);
  });

  it('stops delivering once the author\'s membership is gone', async () => {
    const admin = api.newProject();
    const code = randomUUID();
    const { client, clientId } = await member(admin, [{ resourceType: 'Observation' }]);
    const [mine, admins] = [await receiver(), await receiver()];
    await subscribe(client, `Observation?code=${code}`, mine);
    await subscribe(admin, `Observation?code=${code}`, admins);
    await admin.post('/Observation', observation(code, 'final'));
    await mine.waitFor(1);
    const memberships = await admin.get(`/ProjectMembership?profile=ClientApplication/${clientId}`);
    expect(memberships.body.entry).toHaveLength(1);
    expect((await admin.delete(`/ProjectMembership/${memberships.body.entry[0].resource.id}`)).status).toBe(200);
    await admin.post('/Observation', observation(code, 'final'));
    await admins.waitFor(2);
    await settle();
    expect(mine.received).toHaveLength(1);
  });

  it('keeps delivering everything to a project admin\'s Subscriptions', async () => {
    const admin = api.newProject();
    const code = randomUUID();
    const admins = await receiver();
    await subscribe(admin, `Observation?code=${code}`, admins);
    const first = await admin.post('/Observation', observation(code, 'preliminary'));
    const second = await admin.post('/Observation', observation(code, 'final'));
    expect(deliveredIds(await admins.waitFor(2)).sort()).toEqual([first.body.id, second.body.id].sort());
  });
});
