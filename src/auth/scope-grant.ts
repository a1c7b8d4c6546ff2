import { getSearchParametersFor, isResourceType } from '../fhir/definitions.js';
import { parseScope, resourceScopesOf, ScopeError, scopeCovers, type ParsedScope, type ResourceScope } from '../identity/scopes.js';
import { OAuthError } from './oauth-errors.js';

const invalidScope = (description: string) => new OAuthError(400, 'invalid_scope', description);

/** Search parameter codes a granular scope on `type` may use (`*`: those every type has). */
function knownParameter(type: string, name: string): boolean {
  const code = name.split(':')[0];
  if (type === '*') return code.startsWith('_') && getSearchParametersFor('Patient').some((sp) => sp.code === code);
  return getSearchParametersFor(type).some((sp) => sp.code === code);
}

function checkParameters(scope: ResourceScope): void {
  for (const [name] of scope.params) {
    if (!knownParameter(scope.type, name)) {
      throw invalidScope(`Scope "${scope.text}": ${name} is not a search parameter of ${scope.type === '*' ? 'every resource type' : scope.type}`);
    }
  }
}

function parseRequested(requested: string): ParsedScope {
  try {
    const parsed = parseScope(requested, isResourceType);
    parsed.resource.forEach(checkParameters);
    return parsed;
  } catch (error) {
    if (error instanceof ScopeError) throw invalidScope(error.message);
    throw error;
  }
}

/**
 * Who a token acts for (SMART App Launch 2.0, scopes): `system` for a client acting for itself
 * (client credentials, backend services), `user` for a token acting for a signed-in user.
 */
export type TokenContext = 'system' | 'user';

/** Whether a resource scope's context fits a token's: `system/` for clients, `user/` and `patient/` for users. */
function fitsContext(scope: ResourceScope, context: TokenContext): boolean {
  return context === 'system' ? scope.context === 'system' : scope.context !== 'system';
}

/**
 * The scope granted for a requested one (every grant): malformed scopes are `invalid_scope`;
 * scopes this server does not know, and resource scopes of the other context, are dropped (the
 * granted scope says so); asking only for those is `invalid_scope`, since the token would not be
 * what the client asked for. So is dropping every resource scope asked for: without any, the token
 * would have its membership's whole access, wider than what was asked.
 */
export function grantScope(requested: string, context: TokenContext): string {
  const { granted, resource } = parseRequested(requested);
  const wrong = new Set(resource.filter((scope) => !fitsContext(scope, context)).map((scope) => scope.text));
  const kept = granted.filter((scope) => !wrong.has(scope));
  if (kept.length === 0) throw invalidScope(`None of the requested scopes (${requested}) is supported${contextHint(wrong, context)}: see scopes_supported at /.well-known/smart-configuration`);
  if (wrong.size > 0 && wrong.size === resource.length) {
    throw invalidScope(`None of the requested resource scopes can be granted${contextHint(wrong, context)}`);
  }
  return kept.join(' ');
}

function contextHint(wrong: ReadonlySet<string>, context: TokenContext): string {
  if (wrong.size === 0) return '';
  return context === 'system'
    ? ` (${[...wrong].join(' ')}: a client signing in for itself gets system/ scopes only)`
    : ` (${[...wrong].join(' ')}: a token acting for a user gets user/ and patient/ scopes, system/ ones are for client credentials)`;
}

/**
 * The scope of a token refreshed with `scope` (RFC 6749 6): each scope asked for must be covered
 * by one the login was granted (the same or broader); it may only narrow.
 */
export function narrowScope(granted: string, requested: string): string {
  const before = parseScope(granted);
  const asked = parseRequested(requested);
  for (const scope of asked.granted) {
    const resource = asked.resource.find((r) => r.text === scope);
    const covered = resource ? before.resource.some((g) => scopeCovers(g, resource)) : before.granted.includes(scope);
    if (!covered) throw invalidScope(`Scope "${scope}" was not granted to this login: a refresh may only narrow the scope`);
  }
  if (asked.granted.length === 0) throw invalidScope('A refresh must ask for at least one of the scopes granted');
  // Without resource scopes a token has its membership's whole access: leaving them all out would widen.
  if (asked.resource.length === 0 && resourceScopesOf(granted) !== undefined) {
    throw invalidScope('A refresh must keep at least one resource scope of the login: without any, the token would have wider access');
  }
  return asked.granted.join(' ');
}
