import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { hundredthsText, logRequest } from '../../src/http/request-log.js';

/**
 * The request line as src/http/request-log.ts writes it for a plain pino logger: byte for byte what
 * `log.info({reqId, method, path, status, ms}, 'request')` writes, but the time of day.
 */

function capturingLogger(): { log: pino.Logger; lines: string[] } {
  const lines: string[] = [];
  return { log: pino({ level: 'info' }, { write: (line: string) => void lines.push(line) }), lines };
}

const withoutTime = (line: string) => line.replace(/"time":\d+,/, '"time":0,');

describe('the request log line', () => {
  it('writes the duration as JSON writes the number of milliseconds, rounded to hundredths', () => {
    const values = [0, 1, 5, 10, 99, 100, 101, 105, 110, 1234, 99_999, 100_000, 123_456_789, 2 ** 40 + 7];
    for (let hundredths = 0; hundredths < 20_000; hundredths++) values.push(hundredths);
    for (const hundredths of values) expect(hundredthsText(hundredths)).toBe(JSON.stringify(hundredths / 100));
  });

  it('is the line pino writes for the same fields, with the time of its writing', () => {
    const written = capturingLogger();
    const before = Date.now();
    logRequest(written.log, 'line-id', 'GET', '/fhir/R4/Patient/1', 200, performance.now() - 12.3456);
    const after = Date.now();
    expect(written.lines).toHaveLength(1);
    const line = JSON.parse(written.lines[0]) as { time: number; ms: number };
    expect(line.time).toBeGreaterThanOrEqual(before);
    expect(line.time).toBeLessThanOrEqual(after);
    expect(line.ms).toBeGreaterThanOrEqual(12.35);

    const expected = capturingLogger();
    expected.log.info({ reqId: 'line-id', method: 'GET', path: '/fhir/R4/Patient/1', status: 200, ms: line.ms }, 'request');
    expect(withoutTime(written.lines[0])).toBe(withoutTime(expected.lines[0]));
  });
});
