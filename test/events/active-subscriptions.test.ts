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
});
