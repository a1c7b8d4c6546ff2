import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';

/**
 * History's parameters follow search's rules (docs/rest.md#history): `_offset` up to the search
 * maximum, `_cursor` or `_offset` but not both, no `_sort` nor `_total`, unknown parameters refused
 * under `Prefer: handling=strict`, and `_since` and `_at` both instants.
 */

const api = await useTestServer();

async function refused(path: string, expression: string, headers?: Record<string, string>): Promise<string> {
  const res = await api.newProject().get(path, headers);
  expect(res.status, res.text).toBe(400);
  expect(res.body.resourceType).toBe('OperationOutcome');
  expect(res.body.issue[0].expression).toEqual([expression]);
  return res.body.issue[0].details.text as string;
}

describe('history _offset', () => {
  it('refuses an _offset beyond any integer with 400, not a database error', async () => {
    await refused('/_history?_offset=9999999999999999999', '_offset');
  });

  it('refuses an _offset above 10000 as search does, pointing to the cursor', async () => {
    const text = await refused('/Patient/_history?_offset=10001', '_offset');
    expect(text).toContain('_cursor');
  });

  it('refuses a _count or _offset that is not digits only (0x10, 1e3, +5) with 400', async () => {
    for (const value of ['0x10', '1e3', '+5']) {
      await refused(`/Patient/_history?_count=${value}`, '_count');
      await refused(`/_history?_offset=${value}`, '_offset');
    }
  });

  it('accepts an _offset of 10000', async () => {
    const res = await api.newProject().get('/_history?_offset=10000');
    expect(res.status, res.text).toBe(200);
  });

  it('refuses _cursor and _offset together', async () => {
    const client = api.newProject();
    const first = await client.get('/_history?_count=1');
    const next = (first.body.link as { relation: string; url: string }[]).find((l) => l.relation === 'next')!.url;
    const cursor = new URL(next).searchParams.get('_cursor')!;
    const res = await client.get(`/_history?_count=1&_offset=1&_cursor=${cursor}`);
    expect(res.status, res.text).toBe(400);
    expect(res.body.issue[0].expression).toEqual(['_cursor']);
  });
});

describe('history parameters search has and history does not', () => {
  it('refuses _sort with 400', async () => {
    await refused('/_history?_sort=-_lastUpdated', '_sort');
  });

  it('refuses _total with 400', async () => {
    await refused('/Patient/_history?_total=accurate', '_total');
  });

  it('refuses an unknown parameter under Prefer: handling=strict', async () => {
    await refused('/_history?name=smith', 'name', { Prefer: 'handling=strict' });
  });

  it('ignores an unknown parameter without strict handling', async () => {
    const res = await api.newProject().get('/_history?name=smith');
    expect(res.status, res.text).toBe(200);
  });
});

describe('history _since and _at', () => {
  it('refuses a _since without a time, as _at does', async () => {
    await refused('/_history?_since=2024-01-01', '_since');
    await refused('/_history?_at=2024-01-01', '_at');
  });

  it('accepts an instant for _since', async () => {
    const res = await api.newProject().get('/_history?_since=2024-01-01T00:00:00Z');
    expect(res.status, res.text).toBe(200);
  });
});

describe('history parameter values', () => {
  it("refuses NUL in a super admin's _project with 400", async () => {
    const res = await api.superAdmin.get('/_history?_project=%00');
    expect(res.status, res.text).toBe(400);
    expect(res.body.issue[0].expression).toEqual(['_project']);
  });
});
