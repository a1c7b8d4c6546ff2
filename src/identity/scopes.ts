/**
 * SMART on FHIR scopes (App Launch 2.0 and 1.0 forms), parsed once per token. Resource scopes
 * (`patient/Observation.rs`, `user/*.cruds`, `system/*.read`, `patient/Observation.rs?category=x`)
 * narrow what the membership and its AccessPolicy allow; the other scopes the server knows
 * (`openid`, `launch/patient`, `offline_access`...) are granted as asked and narrow nothing.
 */

/** SMART v2 permissions, in the order a v2 scope writes them. */
export type Permission = 'c' | 'r' | 'u' | 'd' | 's';
export const PERMISSIONS: readonly Permission[] = ['c', 'r', 'u', 'd', 's'];

/** One resource scope. `patient` ones also limit to the launch patient's compartment. */
export interface ResourceScope {
  readonly text: string;
  readonly context: 'patient' | 'user' | 'system';
  /** A resource type, or `*` for every type. */
  readonly type: string;
  readonly permissions: ReadonlySet<Permission>;
  /** Granular scope: search parameters that narrow it (`?category=laboratory`). */
  readonly params: readonly (readonly [string, string])[];
}

/** The resource scopes of a token; absent on an Identity whose token has none (membership access). */
export interface ResourceScopes {
  readonly scopes: readonly ResourceScope[];
}

/** Scopes other than resource scopes that the server grants (unknown ones are dropped). */
const KNOWN_SCOPES = new Set([
  'openid',
  'fhirUser',
  'profile',
  'email',
  'phone',
  'address',
  'launch',
  'launch/patient',
  'launch/encounter',
  'offline_access',
  'online_access',
  'offline',
]);

/** RFC 6749 3.3 scope-token characters. */
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/;
const RESOURCE_SCOPE = /^(patient|user|system)\/([A-Za-z]+|\*)\.([a-z*]+)(?:\?(.*))?$/;
const V2_PERMISSIONS = /^c?r?u?d?s?$/;
const V1_PERMISSIONS: Record<string, string> = { read: 'rs', write: 'cud', '*': 'cruds' };

export class ScopeError extends Error {}

/** A resource scope's permission letters, v1 or v2; undefined when neither. */
function permissionsOf(text: string): Set<Permission> | undefined {
  const letters = V1_PERMISSIONS[text] ?? (text !== '' && V2_PERMISSIONS.test(text) ? text : undefined);
  return letters === undefined ? undefined : new Set(letters.split('') as Permission[]);
}

/** Parses one resource scope; undefined when `text` is no resource scope, ScopeError when it is a malformed one. */
export function parseResourceScope(text: string): ResourceScope | undefined {
  if (!/^(patient|user|system)\//.test(text)) return undefined;
  const match = RESOURCE_SCOPE.exec(text);
  const permissions = match ? permissionsOf(match[3]) : undefined;
  if (!match || !permissions) {
    throw new ScopeError(
      `Scope "${text}" is malformed: write <patient|user|system>/<Type or *>.<permissions>, permissions being v2 letters in the order cruds (e.g. rs) or v1 read, write or *`,
    );
  }
  const query = match[4];
  const params = query === undefined ? [] : [...new URLSearchParams(query).entries()];
  if (query !== undefined && (params.length === 0 || params.some(([name, value]) => name === '' || value === ''))) {
    throw new ScopeError(`Scope "${text}" has an empty or malformed ?param=value part`);
  }
  return { text, context: match[1] as ResourceScope['context'], type: match[2], permissions, params };
}

export interface ParsedScope {
  /** The scopes granted, in the order asked, without repeats. */
  readonly granted: readonly string[];
  readonly resource: readonly ResourceScope[];
}

/**
 * Parses a requested or granted `scope` string. Malformed resource scopes and tokens with
 * characters RFC 6749 forbids throw ScopeError; well-formed scopes the server does not know are
 * dropped from `granted`. `checkType` refuses resource types the server does not have.
 */
export function parseScope(text: string, checkType: (type: string) => boolean = () => true): ParsedScope {
  const granted: string[] = [];
  const resource: ResourceScope[] = [];
  for (const token of text.split(' ').filter(Boolean)) {
    if (!SCOPE_TOKEN.test(token)) throw new ScopeError(`Scope "${token}" has characters a scope cannot have`);
    if (granted.includes(token)) continue;
    const parsed = parseResourceScope(token);
    if (parsed) {
      if (parsed.type !== '*' && !checkType(parsed.type)) throw new ScopeError(`Scope "${token}" names no resource type of this server`);
      resource.push(parsed);
      granted.push(token);
    } else if (KNOWN_SCOPES.has(token)) {
      granted.push(token);
    }
  }
  return { granted, resource };
}

/**
 * The resource scopes an Identity keeps, from a token's (already checked) `scope` claim. Undefined
 * when they cannot narrow anything: no resource scope at all (today's defaults), or a scope that
 * grants every permission on every type without conditions (`system/*.*`, `user/*.cruds`).
 */
export function resourceScopesOf(scope: string | undefined): ResourceScopes | undefined {
  if (!scope) return undefined;
  let parsed: ParsedScope;
  try {
    parsed = parseScope(scope);
  } catch {
    // A claim we issued parses; one that does not narrows to nothing rather than widening.
    return { scopes: [] };
  }
  if (parsed.resource.length === 0) return undefined;
  const everything = parsed.resource.some(
    (s) => s.context !== 'patient' && s.type === '*' && s.params.length === 0 && s.permissions.size === PERMISSIONS.length,
  );
  return everything ? undefined : { scopes: parsed.resource };
}

/**
 * Whether `granted` covers `requested`: same context, the same type or `*`, no permission more,
 * and at least the granted scope's conditions. A refresh may only ask for covered scopes.
 */
export function scopeCovers(granted: ResourceScope, requested: ResourceScope): boolean {
  return (
    granted.context === requested.context &&
    (granted.type === '*' || granted.type === requested.type) &&
    [...requested.permissions].every((p) => granted.permissions.has(p)) &&
    granted.params.every(([name, value]) => requested.params.some(([n, v]) => n === name && v === value))
  );
}
