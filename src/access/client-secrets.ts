import { readClientSecrets } from '../auth/client-secrets.js';
import type { Identity } from '../identity/identity.js';
import type { RequestContext, Services } from '../operations/context.js';
import type { SearchResult, SearchRow } from '../search/service.js';
import type { Resource } from '../fhir/types.js';

/**
 * A ClientApplication's secret is kept beside the resource (src/auth/client-secrets.ts), and every
 * view of the current resource adds it for those who may see it: read, batch reads, search matches
 * and included resources, GraphQL. Project admins of the client's project and super admins see
 * `secret` (and `retiringSecret` during a rotation's grace); nobody else ever does. History and
 * vread show versions as stored: secrets are not versioned.
 */

/** Whether the caller may see secrets at all (cheap: most callers skip everything below). */
function seesSomeSecrets(identity: Identity): boolean {
  return identity.superAdmin || identity.projectAdmin === true;
}

function seesSecretsOf(identity: Identity, projectId: string | undefined): boolean {
  return identity.superAdmin || (identity.projectAdmin === true && projectId === identity.projectId);
}

/**
 * The JSON texts of `items` with the secrets added where the caller may see them, keyed by the
 * index of the item; items left alone (other types, other callers, no text) are absent.
 */
async function textsWithSecrets(
  services: Pick<Services, 'auth'>,
  identity: Identity,
  items: readonly { resourceType: string; id: string; text: string | null }[],
): Promise<Map<number, string>> {
  const texts = new Map<number, string>();
  if (!seesSomeSecrets(identity)) return texts;
  const clients = new Map<number, Resource>();
  items.forEach((item, index) => {
    if (item.resourceType !== 'ClientApplication' || !item.text) return;
    const resource = JSON.parse(item.text) as Resource;
    if (seesSecretsOf(identity, resource.meta?.project)) clients.set(index, resource);
  });
  if (clients.size === 0) return texts;
  const secrets = await readClientSecrets(services.auth, [...clients.values()].map((client) => client.id!));
  for (const [index, client] of clients) {
    const found = secrets.get(client.id!);
    if (found) texts.set(index, JSON.stringify({ ...client, ...found }));
  }
  return texts;
}

/** The items (stored versions, search rows) as the caller may see them: ClientApplications with their secrets for admins. */
export async function withClientSecrets<T extends { resourceType: string; id: string; text: string | null }>(
  services: Pick<Services, 'auth'>,
  identity: Identity,
  items: readonly T[],
): Promise<T[]> {
  const texts = await textsWithSecrets(services, identity, items);
  return texts.size === 0 ? [...items] : items.map((item, index) => (texts.has(index) ? { ...item, text: texts.get(index)! } : item));
}

/** A search's matches and included resources as read shows them (see withClientSecrets). */
export async function searchWithClientSecrets(ctx: RequestContext, result: SearchResult): Promise<SearchResult> {
  if (!seesSomeSecrets(ctx.identity)) return result;
  const rows: SearchRow[] = [...result.matches, ...result.includes];
  if (!rows.some((row) => row.resourceType === 'ClientApplication')) return result;
  const shown = await withClientSecrets(ctx, ctx.identity, rows);
  return { ...result, matches: shown.slice(0, result.matches.length), includes: shown.slice(result.matches.length) };
}
