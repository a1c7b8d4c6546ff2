import { describe, expect, it } from 'vitest';
import { LruResourceCache } from '../../src/storage/resource-cache.js';
import type { StoredVersion } from '../../src/storage/types.js';

const version = (id: string, text = '{}'): StoredVersion => ({
  resourceType: 'Patient',
  id,
  projectId: 'p',
  versionId: `v-${id}`,
  lastUpdated: '2024-01-01T00:00:00.000Z',
  deleted: false,
  text,
});

describe('LruResourceCache', () => {
  it('evicts the least recently used entry beyond its size', () => {
    const cache = new LruResourceCache(2);
    cache.set(version('a'));
    cache.set(version('b'));
    cache.get('Patient', 'a');
    cache.set(version('c'));
    expect(cache.get('Patient', 'b')).toBeUndefined();
    expect(cache.get('Patient', 'a')?.id).toBe('a');
    expect(cache.get('Patient', 'c')?.id).toBe('c');
  });

  it('replaces an entry with its newer version', () => {
    const cache = new LruResourceCache(10);
    cache.set(version('a', '{"v":1}'));
    cache.set(version('a', '{"v":2}'));
    expect(cache.get('Patient', 'a')?.text).toBe('{"v":2}');
  });

  it('drops rather than keeps a version too large to cache', () => {
    const cache = new LruResourceCache(10);
    cache.set(version('a'));
    cache.set(version('a', `"${'x'.repeat(100_000)}"`));
    expect(cache.get('Patient', 'a')).toBeUndefined();
  });
});

describe('LruResourceCache races', () => {
  it('never lets a read put back a version a write replaced', () => {
    const cache = new LruResourceCache(10);
    cache.set({ ...version('a', '{"v":2}'), lastUpdated: '2024-01-02T00:00:00.000Z' });
    cache.fill({ ...version('a', '{"v":1}'), lastUpdated: '2024-01-01T00:00:00.000Z' });
    expect(cache.get('Patient', 'a')?.text).toBe('{"v":2}');
  });

  it('keeps the newer version when an older write lands late', () => {
    const cache = new LruResourceCache(10);
    cache.set({ ...version('a', '{"v":2}'), lastUpdated: '2024-01-02T00:00:00.000Z' });
    cache.set({ ...version('a', '{"v":1}'), lastUpdated: '2024-01-01T00:00:00.000Z' });
    expect(cache.get('Patient', 'a')?.text).toBe('{"v":2}');
  });
});
