import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
import { ASYNC, create, exportDone, exportedLines, idsOf, manifestOf } from './export-helpers.js';

/**
 * The server's own records are never exported: a Bot's code often holds the keys of the systems
 * it calls (SPEC 4.7 leaves a Bot's secrets and credentials out of a clone too), as
 * ClientApplications hold client secrets.
 */

const api = await useTestServer();

const BOT = { resourceType: 'Bot', name: 'Exporter', code: 'const API_KEY = "not-for-export";' };

describe('server records in a bulk export', () => {
  it('a system-level export of a project admin leaves Bots out', async () => {
    const p = api.newProject();
    const patient = await create(p, { resourceType: 'Patient', name: [{ family: 'BotFree' }] });
    await create(p, BOT);
    const { manifest } = await exportDone(p);
    expect(manifest.output.map((output: { type: string }) => output.type)).not.toContain('Bot');
    expect(idsOf(await exportedLines(p, manifest))).toEqual([`Patient/${patient.id}`]);
  });

  it('answers 400 for a _type that names Bot, before any job', async () => {
    const res = await api.newProject().get('/$export?_type=Patient,Bot', ASYNC);
    expect(res.status, res.text).toBe(400);
    expect(res.body.issue[0].expression).toEqual(['_type']);
    expect(res.body.issue[0].details.text).toContain('Bot');
  });

  it('a Patient-level export leaves out a Bot that a resource of a compartment references', async () => {
    const p = api.newProject();
    const bot = await create(p, BOT);
    const patient = await create(p, { resourceType: 'Patient', name: [{ family: 'Messaged' }] });
    const sent = await create(p, {
      resourceType: 'Communication',
      status: 'completed',
      subject: { reference: `Patient/${patient.id}` },
      sender: { reference: `Bot/${bot.id}` },
    });
    const manifest = await manifestOf(p, await p.get('/Patient/$export', ASYNC));
    expect(idsOf(await exportedLines(p, manifest))).toEqual([`Communication/${sent.id}`, `Patient/${patient.id}`].sort());
  });
});
