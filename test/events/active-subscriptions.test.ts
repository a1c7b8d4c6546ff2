import { describe, expect, it } from 'vitest';
import { ActiveSubscriptions } from '../../src/events/active-subscriptions.js';
import { useTestServer } from '../helpers/server.js';

const api = await useTestServer();

describe("each project's active Subscriptions held in memory", () => {
  it('holds at most its bound of projects, dropping the least recently used', async () => {
    const { db, config } = api.server.services;
    const held = new ActiveSubscriptions(config, 2);
    const [one, two, three] = [api.newProject(), api.newProject(), api.newProject()];
    await held.of(db, one.projectId);
    await held.of(db, two.projectId);
    await held.of(db, one.projectId);
    await held.of(db, three.projectId);
    expect(held.size).toBe(2);
    // `one` was used last before `three` came: it is still held, so no statement reads it again.
    const before = db.statementCount;
    await held.of(db, one.projectId);
    expect(db.statementCount).toBe(before);
    await held.of(db, two.projectId);
    expect(db.statementCount).toBeGreaterThan(before);
  });

  it('answers a write’s transaction while a load started outside it is still waiting for a connection', async () => {
    const { db, config } = api.server.services;
    const held = new ActiveSubscriptions(config);
    const { projectId } = api.newProject();
    const within = await db.transaction(async (tx) => {
      // On the embedded database this load waits for the connection the transaction holds.
      const outside = held.of(db, projectId);
      const inside = held.of(tx, projectId);
      const stalled = new Promise<'stalled'>((resolve) => setTimeout(() => resolve('stalled'), 5_000).unref());
      const answer = await Promise.race([inside, stalled]);
      return { answer, outside };
    });
    expect(within.answer).toEqual([]);
    expect(await within.outside).toEqual([]);
  });
});
