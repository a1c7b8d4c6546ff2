import { isResourceType } from '../fhir/definitions.js';
import { errors } from '../fhir/outcome.js';
import type { Resource } from '../fhir/types.js';

/** Medplum's Subscription extensions, read as Medplum names them so its clients work unchanged. */
export const SUPPORTED_INTERACTION_URL = 'https://medplum.com/fhir/StructureDefinition/subscription-supported-interaction';
export const FHIRPATH_CRITERIA_URL = 'https://medplum.com/fhir/StructureDefinition/fhir-path-criteria-expression';
export const MAX_ATTEMPTS_URL = 'https://medplum.com/fhir/StructureDefinition/subscription-max-attempts';
/** The secret's URL; the second is the extension's first name, which Medplum still reads. */
export const SECRET_URLS = [
  'https://www.medplum.com/fhir/StructureDefinition/subscription-secret',
  'https://www.medplum.com/fhir/StructureDefinition-subscriptionSecret',
];

/** Attempts of a delivery without the max-attempts extension, and the most it may ask (Medplum's). */
export const DEFAULT_MAX_ATTEMPTS = 4;
export const MAX_MAX_ATTEMPTS = 19;

interface Extension {
  url?: string;
  valueCode?: string;
  valueString?: string;
  valueInteger?: number;
}

/** The parts of an R4 Subscription deliveries read. */
export interface Subscription extends Resource {
  status?: string;
  criteria?: string;
  extension?: Extension[];
  channel?: { type?: string; endpoint?: string; payload?: string; header?: string[] };
}

/** `Type?query` split into the resource type and its search parameters. */
export interface Criteria {
  resourceType: string;
  params: [string, string][];
}

export function parseCriteria(criteria: string): Criteria {
  const question = criteria.indexOf('?');
  const resourceType = question < 0 ? criteria : criteria.slice(0, question);
  const params = question < 0 ? [] : [...new URLSearchParams(criteria.slice(question + 1))];
  return { resourceType, params };
}

export function extensionOf(subscription: Subscription, url: string): Extension | undefined {
  return subscription.extension?.find((extension) => extension.url === url);
}

export function maxAttemptsOf(subscription: Subscription): number {
  const value = extensionOf(subscription, MAX_ATTEMPTS_URL)?.valueInteger;
  return value === undefined ? DEFAULT_MAX_ATTEMPTS : Math.min(Math.max(value, 1), MAX_MAX_ATTEMPTS);
}

/** `scheme://user:password@` at the start of a URL: the userinfo ends at the authority's last `@`, as URL parsers read it. */
const URL_USERINFO = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^/?#]*@/;

/** The credentials a Subscription's endpoint is called with, as named in a cloned copy's `error`. */
export function credentialsOf(subscription: Subscription): string[] {
  const found: string[] = [];
  if (subscription.channel?.header !== undefined) found.push('channel.header');
  if (URL_USERINFO.test(subscription.channel?.endpoint ?? '')) found.push('the user and password of channel.endpoint');
  if (subscription.extension?.some((item) => SECRET_URLS.includes(item.url ?? ''))) found.push('the signing secret');
  return found;
}

/**
 * The Subscription without the credentials its endpoint is called with: `channel.header` (often
 * an Authorization value), the userinfo of `channel.endpoint` (`https://user:password@host/...`)
 * and the secret its deliveries are signed with. Undefined when it holds none. What a copy of a
 * Subscription leaves out (bulk export, Project/$clone).
 */
export function withoutCredentials(subscription: Subscription): Subscription | undefined {
  if (credentialsOf(subscription).length === 0) return undefined;
  const extension = subscription.extension?.filter((item) => !SECRET_URLS.includes(item.url ?? ''));
  const { header: _header, ...channel } = subscription.channel ?? {};
  if (channel.endpoint !== undefined) channel.endpoint = channel.endpoint.replace(URL_USERINFO, '$1');
  const result: Subscription = { ...subscription, ...(subscription.channel ? { channel } : {}), extension };
  if (!extension?.length) delete result.extension;
  return result;
}

export function secretOf(subscription: Subscription): string | undefined {
  for (const url of SECRET_URLS) {
    const value = extensionOf(subscription, url)?.valueString;
    if (value) return value;
  }
  return undefined;
}

const CHANNEL_TYPES = new Set(['rest-hook', 'websocket']);
const INTERACTIONS = new Set(['create', 'update', 'delete']);

/**
 * The Subscription as stored: `requested` becomes `active` (the server takes it on at once), and
 * what deliveries could never use is refused with 400 at the write rather than failing later.
 */
export async function prepareSubscription(resource: Resource): Promise<Resource> {
  const subscription = resource as Subscription;
  const criteria = subscription.criteria ?? '';
  if (!isResourceType(parseCriteria(criteria).resourceType)) {
    throw errors.invalid(`Subscription.criteria must be a search of a resource type ("Observation?code=8867-4"), got "${criteria}"`, 'Subscription.criteria');
  }
  const channel = subscription.channel ?? {};
  if (!CHANNEL_TYPES.has(channel.type ?? '')) {
    throw errors.invalid(`Subscription.channel.type "${channel.type ?? ''}" is not supported: use rest-hook or websocket`, 'Subscription.channel.type');
  }
  if (channel.type === 'rest-hook') checkEndpoint(channel.endpoint);
  for (const header of channel.header ?? []) {
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+\s*:/.test(header)) {
      throw errors.invalid(`Subscription.channel.header "${header}" must be "Name: value"`, 'Subscription.channel.header');
    }
  }
  const interaction = extensionOf(subscription, SUPPORTED_INTERACTION_URL);
  if (interaction && !INTERACTIONS.has(interaction.valueCode ?? '')) {
    throw errors.invalid('The supported-interaction extension takes valueCode create, update or delete', 'Subscription.extension');
  }
  return subscription.status === 'requested' ? { ...subscription, status: 'active' } as Resource : resource;
}

function checkEndpoint(endpoint: string | undefined): void {
  if (endpoint !== undefined && /^Bot\/[A-Za-z0-9\-.]{1,64}$/.test(endpoint)) return;
  let url: URL | undefined;
  try {
    url = new URL(endpoint ?? '');
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw errors.invalid(`Subscription.channel.endpoint must be an http(s) URL or Bot/{id}, got "${endpoint ?? ''}"`, 'Subscription.channel.endpoint');
  }
}
