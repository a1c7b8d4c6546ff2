import { MemoryStorage } from '@medplum/core';
import { afterAll, beforeAll } from 'vitest';

/**
 * MedplumClient keeps its PKCE verifier in the browser's sessionStorage, which Node lacks: a memory
 * one stands in while the calling file runs (its worker runs other files after it, which must not
 * see it). The client's warning each time it falls back to a plain challenge there is expected,
 * and kept quiet.
 */
export function useMedplumSessionStorage(): void {
  const globals = globalThis as { sessionStorage?: Storage };
  const hadSessionStorage = 'sessionStorage' in globals;
  const warn = console.warn;
  beforeAll(() => {
    if (!hadSessionStorage) globals.sessionStorage = new MemoryStorage();
    console.warn = (...args: unknown[]) => {
      if (!String(args[0]).startsWith('Failed to hash code verifier')) warn(...args);
    };
  });
  afterAll(() => {
    if (!hadSessionStorage) delete globals.sessionStorage;
    console.warn = warn;
  });
}
