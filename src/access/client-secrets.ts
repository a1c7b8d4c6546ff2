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
 *
 * A Project's `secret` and `systemSecret` (name/value pairs its bots read) are stored with the
 * Project, so every view of it, history included, leaves them out for anyone but the project's
 * admins and super admins; `systemSecret` is left out for project admins too (super admins only).
 */

/** Project elements only the project's admins and super admins see. */
const PROJECT_SECRETS = ['secret', 'systemSecret'] as const;
/** Project elements only super admins see (as Medplum: they reach system Bots, which only super admins mark). */
const SUPER_ADMIN_SECRETS = ['systemSecret'] as const;

/** Whether the caller may see secrets at all (cheap: most callers skip everything below). */
function seesSomeSecrets(identity: Identity): boolean {
  return identity.superAdmin || identity.projectAdmin === true;
}

function seesSecretsOf(identity: Identity, projectId: string | undefined): boolean {
  return identity.superAdmin || (identity.projectAdmin === true && projectId === identity.projectId);
}

/** The Project elements hidden from the caller in a view of Project `projectId`. */
function hiddenProjectSecrets(identity: Identity, projectId: string): readonly string[] {
  if (identity.superAdmin) return [];
  return seesSecretsOf(identity, projectId) ? SUPER_ADMIN_SECRETS : PROJECT_SECRETS;
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
  items.forEach((item, index) => {
    if (item.resourceType !== 'Project' || !item.text) return;
    const hidden = hiddenProjectSecrets(identity, item.id);
    if (holdsAny(item.text, hidden)) texts.set(index, without(item.text, hidden));
  });
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

/** Whether a Project's text may hold any of `names` (cheap: most Projects have none). */
function holdsAny(text: string, names: readonly string[]): boolean {
  return names.some((name) => text.includes(`"${name}"`));
}

function without(text: string, names: readonly string[]): string {
  const project = JSON.parse(text) as Record<string, unknown>;
  for (const name of names) delete project[name];
  return JSON.stringify(project);
}

/** Whether a view of `resourceType` may differ from its stored text (withClientSecrets changes it). */
export function mayHoldSecrets(resourceType: string): boolean {
  return resourceType === 'ClientApplication' || resourceType === 'Project';
}

/**
 * The items (stored versions, search rows) as the caller may see them: ClientApplications with
 * their secrets for admins, Projects without theirs for anyone else.
 */
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
  const rows: SearchRow[] = [...result.matches, ...result.includes];
  if (!rows.some((row) => mayHoldSecrets(row.resourceType))) return result;
  const shown = await withClientSecrets(ctx, ctx.identity, rows);
  return { ...result, matches: shown.slice(0, result.matches.length), includes: shown.slice(result.matches.length) };
}
