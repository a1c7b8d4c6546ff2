import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../helpers/prng.js';
import { patientBody, useTestServer } from '../helpers/server.js';

const api = await useTestServer();

const ODD_VALUES: unknown[] = [null, true, 0, -1.5, 1e308, '', ' ', 'x'.repeat(5000), [], {}, [[[]]], { __proto__: { a: 1 } }, '\u0000', '2020-13-45', 'Patient/', { resourceType: 'Patient' }];

function mutate(value: unknown, random: () => number, depth = 0): unknown {
  if (depth > 4 || random() < 0.15) return ODD_VALUES[Math.floor(random() * ODD_VALUES.length)];
  if (Array.isArray(value)) return value.map((item) => mutate(item, random, depth + 1));
  if (value && typeof value === 'object') {
    const copy: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(value)) {
      if (random() < 0.1) continue;
      copy[random() < 0.05 ? `${key}X` : key] = random() < 0.5 ? mutate(child, random, depth + 1) : child;
    }
    return copy;
  }
  return value;
}

function malformedText(random: () => number): string {
  const text = JSON.stringify(patientBody());
  const cut = Math.floor(random() * text.length);
  const choices = [
    text.slice(0, cut),
    text.slice(0, cut) + '}'.repeat(3) + text.slice(cut),
    `${'['.repeat(2000)}${']'.repeat(2000)}`,
    text.replace(/"/g, random() < 0.5 ? "'" : '"\u0000'),
    `\uFEFF${text}`,
    'null',
    '12',
    '"Patient"',
  ];
  return choices[Math.floor(random() * choices.length)];
}

describe('malformed bodies', () => {
  it('never produce a 500 and never leave a partial write', async () => {
    const client = api.newProject();
    let created = 0;
    for (let seed = 1; seed <= 150; seed++) {
      const random = mulberry32(seed);
      const body = seed % 3 === 0 ? malformedText(random) : JSON.stringify(mutate(patientBody(), random));
      const res = await client.request('POST', '/Patient', body, { 'Content-Type': 'application/fhir+json' });
      expect(res.status, `seed ${seed}: ${body.slice(0, 200)}`).toBeLessThan(500);
      if (res.status === 201) created++;
      else expect(res.body?.resourceType, `seed ${seed}`).toBe('OperationOutcome');
    }
    const history = await client.get('/Patient/_history?_count=1000');
    expect(history.body.entry ?? []).toHaveLength(created);
  });

  it('leave an existing resource unchanged when an update body is malformed', async () => {
    const client = api.newProject();
    const original = await client.post('/Patient', patientBody());
    for (let seed = 1000; seed < 1060; seed++) {
      const random = mulberry32(seed);
      const mutated = { ...(mutate(original.body, random) as Record<string, unknown>), resourceType: 'Patient', id: original.body.id };
      const res = await client.put(`/Patient/${original.body.id}`, mutated);
      expect(res.status, `seed ${seed}`).toBeLessThan(500);
      if (res.status === 200) await client.put(`/Patient/${original.body.id}`, original.body);
    }
    const read = await client.get(`/Patient/${original.body.id}`);
    expect(read.body.name).toEqual(original.body.name);
  });
});
