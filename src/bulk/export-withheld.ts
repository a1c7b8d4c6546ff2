import type { Database } from '../db/database.js';
import { SECRET_URLS, withoutCredentials, type Subscription } from '../events/subscription.js';
import { SUBSETTED } from '../fhir/summary.js';

/**
 * What an export never writes, beyond the server's own records (Bots among them): the Binaries
 * holding a Bot's code, and the credentials a Subscription sends to its endpoint. Bot code often
 * holds the keys of the systems it calls, and `channel.header` the Authorization value of one.
 */

/**
 * `Binary/{id}` of every Binary a Bot of the project points at as its `executableCode` or
 * `sourceCode`, in any version of the Bot (an older deployment's code holds the same keys), deleted
 * Bots included. Bots are few, so every version is read at each run of an export.
 */
export async function botCodeBinaries(db: Database, projectId: string): Promise<Set<string>> {
  const rows = await db.query<{ url: string | null }>(
    `SELECT DISTINCT code.url FROM resource_history h,
       LATERAL (VALUES (h.content::jsonb #>> '{executableCode,url}'), (h.content::jsonb #>> '{sourceCode,url}')) AS code(url)
     WHERE h."projectId" = $1 AND h."resourceType" = 'Bot' AND NOT h.deleted`,
    [projectId],
  );
  const binaries = new Set<string>();
  for (const { url } of rows) {
    const id = binaryIdOf(url);
    if (id) binaries.add(`Binary/${id}`);
  }
  return binaries;
}

/** The id of a Binary an attachment URL names: `Binary/{id}`, absolute or with a `_history` version. */
function binaryIdOf(url: string | null): string | undefined {
  return url?.match(/(?:^|\/)Binary\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/[^/]+)?$/)?.[1];
}

/**
 * A Subscription's stored text as an export writes it: without `channel.header` nor the secret
 * its deliveries are signed with, marked SUBSETTED so that an importer knows it is not whole (a
 * copy created from it would deliver without the receiver's credentials). Other resources, and
 * Subscriptions that hold neither, are copied as they are, unparsed.
 */
export function withoutSubscriptionSecrets(type: string, text: string): string {
  if (type !== 'Subscription' || !(text.includes('"header"') || SECRET_URLS.some((url) => text.includes(url)))) return text;
  const subscription = JSON.parse(text) as Subscription;
  const result = withoutCredentials(subscription);
  if (!result) return text;
  const tags = (subscription.meta?.tag ?? []).filter((tag) => tag.code !== SUBSETTED.code);
  result.meta = { ...subscription.meta, tag: [...tags, SUBSETTED] };
  return JSON.stringify(result);
}
