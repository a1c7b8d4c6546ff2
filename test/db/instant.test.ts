import { describe, expect, it } from 'vitest';
import { toInstant } from '../../src/db/database.js';

/** What toInstant gave before its string fast path: through Date. */
function throughDate(text: string): string {
  return new Date(/[zZ]|[+-]\d\d(:?\d\d)?$/.test(text) ? text.replace(' ', 'T') : `${text.replace(' ', 'T')}Z`).toISOString();
}

describe('toInstant', () => {
  it.each([
    ['2026-01-02T03:04:05.123456+00:00', '2026-01-02T03:04:05.123Z'],
    ['2026-01-02 03:04:05.123456', '2026-01-02T03:04:05.123Z'],
    ['2026-01-02 03:04:05', '2026-01-02T03:04:05.000Z'],
    ['2026-01-02T03:04:05.9Z', '2026-01-02T03:04:05.900Z'],
    ['2026-01-02T03:04:05.99999+0000', '2026-01-02T03:04:05.999Z'],
    ['2026-01-02T05:04:05+02:00', '2026-01-02T03:04:05.000Z'],
  ])('reads %s as %s', (text, instant) => {
    expect(toInstant(text)).toBe(instant);
  });

  it('gives what Date gives for every form the adapters return', () => {
    const pad = (value: number, width = 2) => String(value).padStart(width, '0');
    for (let i = 0; i < 2000; i++) {
      const date = `${1970 + (i % 90)}-${pad(1 + (i % 12))}-${pad(1 + (i % 28))}`;
      const time = `${pad(i % 24)}:${pad((i * 7) % 60)}:${pad((i * 13) % 60)}`;
      const fraction = ['', `.${i % 10}`, `.${pad(i % 1000, 3)}`, `.${pad((i * 7919) % 1_000_000, 6)}`][i % 4];
      for (const text of [`${date} ${time}${fraction}`, `${date}T${time}${fraction}+00:00`, `${date}T${time}${fraction}Z`]) {
        expect(toInstant(text), text).toBe(throughDate(text));
      }
    }
  });

  it('passes Date values through', () => {
    expect(toInstant(new Date('2026-01-02T03:04:05.006Z'))).toBe('2026-01-02T03:04:05.006Z');
  });
});
