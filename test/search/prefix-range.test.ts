import { describe, expect, it } from 'vitest';
import { prefixUpperBound } from '../../src/search/query/conditions/string.js';

describe('prefixUpperBound', () => {
  it.each([
    ['smi', 'smj'],
    ['a\u{10FFFF}', 'b'],
    ['é', 'ê'],
    ['\uD7FF', '\uE000'],
    ['x\u{1F600}', 'x\u{1F601}'],
  ])('of %j is %j', (prefix, upper) => {
    expect(prefixUpperBound(prefix)).toBe(upper);
  });

  it('is undefined when every code point is the last one', () => {
    expect(prefixUpperBound('\u{10FFFF}\u{10FFFF}')).toBeUndefined();
  });

  it('is above every string starting with the prefix and below every other string above it, in UTF-8 byte order', () => {
    const bytes = (s: string) => Buffer.from(s, 'utf8');
    const upper = bytes(prefixUpperBound('smi\u{FFFF}')!);
    expect(Buffer.compare(bytes('smi\u{FFFF}\u{10FFFF}zzz'), upper)).toBe(-1);
    expect(Buffer.compare(bytes('smi\u{10000}'), upper)).toBe(0);
  });
});
