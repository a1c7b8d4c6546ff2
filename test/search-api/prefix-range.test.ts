import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
import { create, found } from './helpers.js';

/**
 * Starts-with searches run as an index range on text_pattern_ops (PostgreSQL derives it from the
 * LIKE pattern: the prefix, up to the prefix with its last character incremented). These cases
 * sit on the edges of that range.
 */
const api = await useTestServer();

const patient = (family: string) => ({ resourceType: 'Patient', name: [{ family }] });

describe('starts-with at the edges of the index range', () => {
  it('a prefix ending in a character above ASCII finds names continuing it, not the next character', async () => {
    const p = api.newProject();
    const tokyo = await create(p, patient('東京'));
    await create(p, patient('杲'));
    expect(await found(p, `/Patient?family=${encodeURIComponent('東')}`)).toEqual([tokyo]);
  });

  it('a prefix ending just below the surrogate range does not find names continuing past it', async () => {
    const p = api.newProject();
    const below = await create(p, patient('ab\u{D7FF}c'));
    await create(p, patient('ab\u{E000}'));
    expect(await found(p, `/Patient?family=${encodeURIComponent('ab\u{D7FF}')}`)).toEqual([below]);
  });

  it('a prefix ending in the last code point finds the names continuing it', async () => {
    const p = api.newProject();
    const last = await create(p, patient('ab\u{10FFFF}z'));
    await create(p, patient('ac'));
    expect(await found(p, `/Patient?family=${encodeURIComponent('ab\u{10FFFF}')}`)).toEqual([last]);
  });

  it('LIKE wildcards in the prefix are matched literally', async () => {
    const p = api.newProject();
    const percent = await create(p, patient('a%b'));
    await create(p, patient('axb'));
    expect(await found(p, `/Patient?family=${encodeURIComponent('a%')}`)).toEqual([percent]);
  });

  it('uri :below finds the uris under a path by the same range', async () => {
    const p = api.newProject();
    const under = await create(p, { resourceType: 'ValueSet', status: 'active', url: 'http://example.org/fhir/ValueSet/a' });
    await create(p, { resourceType: 'ValueSet', status: 'active', url: 'http://example.org/fhis/ValueSet/b' });
    expect(await found(p, '/ValueSet?url:below=http://example.org/fhir')).toEqual([under]);
  });
});
