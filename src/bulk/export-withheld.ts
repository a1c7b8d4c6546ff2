import type { Database } from '../db/database.js';
import { SECRET_URLS, withoutCredentials, type Subscription } from '../events/subscription.js';
import { SUBSETTED } from '../fhir/summary.js';
import { selectBotCodeBinaryIds } from '../storage/bot-code.js';

/**
 * What an export never writes, beyond the server's own records (Bots among them): the Binaries
 * holding a Bot's code, and the credentials a Subscription sends to its endpoint. Bot code often
 * holds the keys of the systems it calls, and `channel.header` (or the endpoint's userinfo) the
 * credentials of one.
 */

/**
 * `Binary/{id}` of every Binary a Bot of the project points at as its code (src/storage/bot-code.ts),
 * read anew at each run of an export.
 */
export async function botCodeBinaries(db: Database, projectId: string): Promise<Set<string>> {
  return new Set([...(await selectBotCodeBinaryIds(db, projectId))].map((id) => `Binary/${id}`));
}

/**
 * A Subscription's stored text as an export writes it: without `channel.header`, the user and
 * password in `channel.endpoint`, nor the secret its deliveries are signed with, marked SUBSETTED
 * so that an importer knows it is not whole (a copy created from it would deliver without the
 * receiver's credentials). Other resources, and Subscriptions that hold none, are copied as they
 * are, unparsed.
 */
export function withoutSubscriptionSecrets(type: string, text: string): string {
  if (type !== 'Subscription' || !(text.includes('"header"') || text.includes('@') || SECRET_URLS.some((url) => text.includes(url)))) return text;
  const subscription = JSON.parse(text) as Subscription;
  const result = withoutCredentials(subscription);
  if (!result) return text;
  const tags = (subscription.meta?.tag ?? []).filter((tag) => tag.code !== SUBSETTED.code);
  result.meta = { ...subscription.meta, tag: [...tags, SUBSETTED] };
  return JSON.stringify(result);
}
