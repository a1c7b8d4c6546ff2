import type { ClientApplication, ProjectMembership } from '../fhir/resources.js';
import { membershipsReferencing, type ClientSecretHashes } from './accounts.js';
import { stableId } from './account-writes.js';
import { readClientSecretHashes, secretHashesOf } from './client-secrets.js';
import type { AuthService } from './service.js';

/**
 * A ClientApplication signing in as itself (client credentials at the token endpoint, HTTP Basic
 * on the FHIR API): the client, its secret hashes and the membership it acts through.
 */

export interface FoundClient {
  client: ClientApplication;
  /** The stored hashes of its secret (and of the previous one after a rotation). */
  hashes: ClientSecretHashes | undefined;
  /** Its default membership (the stable id every client made by the server has), when live. */
  membership: ProjectMembership | undefined;
}

/**
 * A client, the hash of its secret and its default membership. On the embedded database, from
 * memory once seen (the resource cache and the client credential cache: no statement at all,
 * which is most of the cost of a token there); on PostgreSQL, where other servers may change
 * them, one statement every time: hand-written SQL on the adapter, the secret hashes joined to the
 * resources, since it runs on every token request (src/db/database.ts). The embedded database's
 * first read of the hashes goes through the Prisma client. A rotated-out secret's end of grace is
 * stored with its hash, so each server judges it at each request, cached or not.
 */
export async function findClient(auth: AuthService, id: string): Promise<FoundClient | undefined> {
  const membershipId = stableId(`client-membership:${id}`);
  const credentialId = `ClientApplication/${id}`;
  if (!auth.clientCredentials.enabled) {
    const rows = await auth.db.query<{ client: string; hash: string | null; retiringHash: string | null; retiringUntil: number | null; membership: string | null }>(
      `SELECT r.content::text AS client, c.hash, c."retiringHash",
         (extract(epoch FROM c."retiringUntil") * 1000)::float8 AS "retiringUntil", m.content::text AS membership
       FROM resource r
       LEFT JOIN auth_credential c ON c.id = 'ClientApplication/' || r.id
       LEFT JOIN resource m ON m."resourceType" = 'ProjectMembership' AND m.id = $2 AND NOT m.deleted
       WHERE r."resourceType" = 'ClientApplication' AND r.id = $1 AND NOT r.deleted`,
      [id, membershipId],
    );
    const row = rows[0];
    if (!row) return undefined;
    return {
      client: JSON.parse(row.client) as ClientApplication,
      hashes: row.hash === null ? undefined : secretHashesOf(row.hash, row.retiringHash, row.retiringUntil),
      membership: row.membership ? (JSON.parse(row.membership) as ProjectMembership) : undefined,
    };
  }
  const readAt = auth.clientCredentials.current;
  const versions = await auth.readCurrent([
    { resourceType: 'ClientApplication', id },
    { resourceType: 'ProjectMembership', id: membershipId },
  ]);
  const client = versions.get(`ClientApplication/${id}`);
  if (!client?.text) return undefined;
  let hashes = auth.clientCredentials.get(credentialId);
  if (hashes === undefined) {
    hashes = await readClientSecretHashes(auth.db, id);
    if (hashes !== undefined) auth.clientCredentials.fill(credentialId, hashes, readAt);
  }
  const membership = versions.get(`ProjectMembership/${membershipId}`)?.text;
  return {
    client: JSON.parse(client.text) as ClientApplication,
    hashes,
    membership: membership ? (JSON.parse(membership) as ProjectMembership) : undefined,
  };
}


/**
 * The membership a client acts through: its default one when live, else an active membership of
 * its project whose profile is the client (one an admin made over REST). Undefined when it has none.
 */
export async function clientMembership(auth: AuthService, id: string, found: FoundClient): Promise<ProjectMembership | undefined> {
  const project = found.client.meta?.project;
  const stable = found.membership;
  const membership =
    (stable && stable.active !== false ? stable : undefined) ??
    (await membershipsReferencing(auth.db, 'profile', `ClientApplication/${id}`)).find((m) => m.meta?.project === project);
  return membership && membership.meta?.project === project ? membership : undefined;
}

/** The scope a client credentials request without `scope` asks for: the client's `defaultScope`, else `system/*.*`. */
export function defaultClientScope(client: ClientApplication): string {
  return client.defaultScope?.length ? client.defaultScope.join(' ') : 'system/*.*';
}
