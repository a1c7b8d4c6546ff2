import { beforeAll, describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { create, found } from './helpers.js';

/**
 * Every date prefix against periods open at one end and periods at the edges of FHIR's years
 * (0001-01-01 and 9999-12-31), compared with search.html's range rules written out here on their
 * own: a missing bound is open (-∞ or +∞). Each search runs alone (a lone bound is paged from the
 * date index), beside another parameter (the general page) and as a count, which must all agree.
 */
const api = await useTestServer();

const DAY = 86_400_000;

interface Span {
  from: number;
  to: number;
}

/** A date of these tests (whole days, or a dateTime in UTC) as the instants it covers. */
function spanOf(text: string): Span {
  const from = Date.parse(text.length === 10 ? `${text}T00:00:00Z` : text);
  return { from, to: text.length === 10 ? from + DAY - 1 : from + 999 };
}

function periodSpan(start?: string, end?: string): Span {
  return { from: start ? spanOf(start).from : -Infinity, to: end ? spanOf(end).to : Infinity };
}

/** search.html's rule for each prefix but `ap` (which depends on the time of the search). */
const RULES: Record<string, (target: Span, value: Span) => boolean> = {
  eq: (t, v) => t.from >= v.from && t.to <= v.to,
  ne: (t, v) => !(t.from >= v.from && t.to <= v.to),
  gt: (t, v) => t.to > v.to,
  lt: (t, v) => t.from < v.from,
  ge: (t, v) => t.to > v.to || (t.from >= v.from && t.to <= v.to),
  le: (t, v) => t.from < v.from || (t.from >= v.from && t.to <= v.to),
  sa: (t, v) => t.from > v.to,
  eb: (t, v) => t.to < v.from,
};

const PERIODS: Record<string, { start?: string; end?: string }> = {
  openFromLastDay: { start: '9999-12-31' },
  openFromLastDayNoon: { start: '9999-12-31T12:00:00Z' },
  openToFirstDay: { end: '0001-01-01' },
  openToFirstDayNoon: { end: '0001-01-01T12:00:00Z' },
  lastDay: { start: '9999-12-31', end: '9999-12-31' },
  firstDay: { start: '0001-01-01', end: '0001-01-01' },
  openFrom2019: { start: '2019-06-01' },
  openTo2021: { end: '2021-06-01' },
  within2020: { start: '2020-01-01T08:00:00Z', end: '2020-01-01T09:00:00Z' },
};

const VALUES = ['0001-01-01', '2020-01-01', '9999-12-31'];

describe('date prefixes against open periods and the edges of the years', () => {
  let p: ProjectClient;
  const ids = new Map<string, string>();

  beforeAll(async () => {
    p = api.newProject();
    for (const [name, period] of Object.entries(PERIODS)) {
      ids.set(name, await create(p, { resourceType: 'Encounter', status: 'finished', class: { code: 'AMB' }, period }));
    }
  });

  function expected(prefix: string, value: string): string[] {
    const rule = RULES[prefix];
    return Object.entries(PERIODS)
      .filter(([, { start, end }]) => rule(periodSpan(start, end), spanOf(value)))
      .map(([name]) => ids.get(name) ?? name)
      .sort();
  }

  for (const prefix of Object.keys(RULES)) {
    for (const value of VALUES) {
      it(`date=${prefix}${value}`, async () => {
        const want = expected(prefix, value);
        expect(await found(p, `/Encounter?date=${prefix}${value}&_count=100`)).toEqual(want);
        expect(await found(p, `/Encounter?status=finished&date=${prefix}${value}&_count=100`)).toEqual(want);
        const counted = await p.get(`/Encounter?date=${prefix}${value}&_summary=count`);
        expect(counted.body.total, counted.text).toBe(want.length);
      });
    }
  }

  it('ap finds the open periods that reach near the value', async () => {
    const names = (found: string[]) => Object.keys(PERIODS).filter((n) => found.includes(ids.get(n) ?? '')).sort();
    expect(names(await found(p, '/Encounter?date=ap2020-01-01&_count=100'))).toEqual(['openFrom2019', 'openTo2021', 'within2020']);
    expect(names(await found(p, '/Encounter?date=ap9999-12-31&_count=100'))).toEqual(['lastDay', 'openFrom2019', 'openFromLastDay', 'openFromLastDayNoon']);
    expect(names(await found(p, '/Encounter?date=ap0001-01-01&_count=100'))).toEqual(['firstDay', 'openTo2021', 'openToFirstDay', 'openToFirstDayNoon']);
  });
});
