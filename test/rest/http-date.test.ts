import { describe, expect, it } from 'vitest';
import { httpDate } from '../../src/router/http-date.js';

// Last-Modified is written from the stored instant's parts (src/router/http-date.ts): it must be
// the date Date itself writes, for every instant and for forms it does not take apart.

describe('HTTP dates of stored instants', () => {
  it('writes every day of four centuries as Date does', () => {
    const differing: string[] = [];
    for (let time = Date.UTC(1900, 0, 1); time < Date.UTC(2300, 0, 1); time += 86_400_000 + 3_723_456) {
      const instant = new Date(time).toISOString();
      if (httpDate(instant) !== new Date(instant).toUTCString()) differing.push(instant);
    }
    expect(differing).toEqual([]);
  });

  it('leaves other forms and impossible dates to Date', () => {
    for (const value of ['2026-02-29T00:00:00.000Z', '2024-02-30T10:00:00.000Z', '2026-04-30T24:00:00.000Z', '2026-04-30T23:60:00.000Z', '2026-11-27T17:20:01Z', '2026-11-27T17:20:01.123+01:00', 'not a date']) {
      expect(httpDate(value)).toBe(new Date(value).toUTCString());
    }
  });
});
