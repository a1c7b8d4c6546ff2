import type { JSONWebKeySet } from 'jose';
import { issue } from '../fhir/outcome.js';
import type { ClientApplication } from '../fhir/resources.js';
import type { OperationOutcomeIssue, Resource } from '../fhir/types.js';

/**
 * A ClientApplication's public keys stored on the resource itself, for SMART Backend Services
 * clients that publish no JWK Set URL. Medplum's ClientApplication has `jwksUri` only, so the set
 * is an extension (the resource stays valid for Medplum's definitions, and a Medplum server would
 * ignore it) whose `valueString` is the JWK Set's JSON (`{"keys": [...]}`) as RFC 7517 writes it:
 * FHIR has no JSON-valued type, and a string keeps the set readable and copyable as is.
 */
export const STORED_JWKS_URL = 'https://flint.dev/fhir/StructureDefinition/client-jwks';

/** Members that only private (or symmetric) keys have: a stored set holds public keys only. */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k'] as const;
const KEY_TYPES = new Set(['RSA', 'EC']);
const MAX_KEYS = 20;

/** The stored JWK Set's text, when the client has one. */
export function storedJwksText(client: ClientApplication): string | undefined {
  const found = client.extension?.find((extension) => extension.url === STORED_JWKS_URL);
  return typeof found?.valueString === 'string' ? found.valueString : undefined;
}

/** The stored JWK Set, or what is wrong with it (a sentence for a 400 or an invalid_client). */
export function parseStoredJwks(text: string): JSONWebKeySet | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return 'is not JSON: it must be a JWK Set, {"keys": [...]}';
  }
  const keys = (parsed as { keys?: unknown } | null)?.keys;
  if (typeof parsed !== 'object' || parsed === null || !Array.isArray(keys) || keys.length === 0) {
    return 'must be a JWK Set with at least one key, {"keys": [...]}';
  }
  if (keys.length > MAX_KEYS) return `holds ${keys.length} keys: at most ${MAX_KEYS}`;
  for (const [index, key] of keys.entries()) {
    const problem = keyProblem(key);
    if (problem) return `key ${index} ${problem}`;
  }
  return parsed as JSONWebKeySet;
}

function keyProblem(key: unknown): string | undefined {
  if (typeof key !== 'object' || key === null || Array.isArray(key)) return 'is not a JWK (a JSON object)';
  const jwk = key as Record<string, unknown>;
  if (typeof jwk.kty !== 'string' || !KEY_TYPES.has(jwk.kty)) return 'must have kty RSA or EC (RS384 or ES384 keys)';
  if (PRIVATE_MEMBERS.some((member) => member in jwk)) return 'is a private key: store the public key only';
  if (jwk.kid !== undefined && typeof jwk.kid !== 'string') return 'has a kid that is not a string';
  return undefined;
}

/**
 * A write check (src/validation/resource-checks.ts): a ClientApplication's stored JWK Set must be
 * one, of public RSA or EC keys, so that a mistake shows when the client is saved rather than as
 * a refused token later. Several of these extensions would leave which one counts unclear.
 */
export async function storedJwksCheck(resource: Resource): Promise<OperationOutcomeIssue[]> {
  if (resource.resourceType !== 'ClientApplication') return [];
  const client = resource as ClientApplication;
  const stored = client.extension?.filter((extension) => extension.url === STORED_JWKS_URL) ?? [];
  if (stored.length === 0) return [];
  const where = 'ClientApplication.extension';
  if (stored.length > 1) return [issue('invalid', `A ClientApplication has at most one ${STORED_JWKS_URL} extension`, where)];
  const text = stored[0].valueString;
  if (typeof text !== 'string') return [issue('invalid', `The ${STORED_JWKS_URL} extension takes valueString, the JWK Set's JSON`, where)];
  const parsed = parseStoredJwks(text);
  return typeof parsed === 'string' ? [issue('invalid', `The stored JWK Set (${STORED_JWKS_URL}) ${parsed}`, where)] : [];
}
