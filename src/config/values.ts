import { readFileSync } from 'node:fs';
import type { ExternalAuthProvider } from './types.js';

/** What `loadConfig` (src/config.ts) reads values with: the file, the error, the values with rules of their own. */

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n- ${problems.join('\n- ')}`);
  }
}

export type Env = Record<string, string | undefined>;

export function definedOnly(env: Env): Env {
  return Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined));
}

export function readConfigFile(path: string | undefined): Env {
  if (!path) return {};
  const parsed: unknown = JSON.parse(readFileSync(path, 'utf8'));
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError([`${path} must hold a JSON object of variable names to values`]);
  }
  return Object.fromEntries(
    Object.entries(parsed).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]),
  );
}

export function parseProviders(raw: string | undefined, problems: string[]): ExternalAuthProvider[] {
  if (!raw) return [];
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    problems.push('EXTERNAL_AUTH_PROVIDERS must be a JSON array');
    return [];
  }
  if (!Array.isArray(value)) {
    problems.push('EXTERNAL_AUTH_PROVIDERS must be a JSON array');
    return [];
  }
  return value.flatMap((p: unknown, i) => {
    const entry = p as Partial<ExternalAuthProvider> | null;
    if (!entry || typeof entry.issuer !== 'string' || typeof entry.userInfoUrl !== 'string') {
      problems.push(`EXTERNAL_AUTH_PROVIDERS[${i}] needs string "issuer" and "userInfoUrl"`);
      return [];
    }
    return [{ issuer: entry.issuer, userInfoUrl: entry.userInfoUrl }];
  });
}

/** CACHE_NAMESPACE: lower-case letters, digits and `_` (it becomes part of a PostgreSQL channel name). */
export function namespace(raw: string | undefined, problems: string[]): string {
  if (raw === undefined || raw === '') return 'flint';
  if (/^[a-z0-9_]{1,40}$/.test(raw)) return raw;
  problems.push(`CACHE_NAMESPACE must be 1-40 lower-case letters, digits or _, got "${raw}"`);
  return 'flint';
}

/** JOB_QUEUE: letters, digits and `_ . : -`, as a job row stores it. */
export function jobQueue(raw: string | undefined, problems: string[]): string {
  if (raw === undefined || raw === '') return 'default';
  if (/^[A-Za-z0-9_.:-]{1,64}$/.test(raw)) return raw;
  problems.push(`JOB_QUEUE must be 1-64 letters, digits or _ . : -, got "${raw}"`);
  return 'default';
}
