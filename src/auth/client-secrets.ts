import type { Database } from '../db/database.js';
import { errors } from '../fhir/outcome.js';
import type { ClientSecretHashes } from './accounts.js';
import { hashSecret, randomSecret, safeEqual, seal, unseal, type VerifiedSecrets } from './secrets.js';
import type { AuthService } from './service.js';

/**
 * A ClientApplication's secrets: the current one and, after `$rotate-secret`, the previous one,
 * which keeps working until `retiringUntil` (CLIENT_SECRET_GRACE_MS after the rotation) so that
 * running apps can switch. Both live in the client's auth_credential row (hash to verify, sealed
 * copy for admins to read back), never in the resource.
 */

export function clientCredentialId(clientId: string): string {
  return `ClientApplication/${clientId}`;
}

/** The verified-secret memory of the previous secret, apart from the current one's: apps on either keep theirs. */
function retiringKey(clientId: string): string {
  return `${clientCredentialId(clientId)}#retiring`;
}

/** The previous secret's hash while it is still accepted, else undefined. */
export function acceptedRetiringHash(hashes: ClientSecretHashes, now = Date.now()): string | undefined {
  return hashes.retiringHash !== undefined && hashes.retiringUntil !== undefined && now < hashes.retiringUntil ? hashes.retiringHash : undefined;
}

/**
 * Whether `secret` is the client's current secret or, during a rotation's grace, its previous one.
 * What this server verified before is looked up for both first, so an app still sending the
 * previous secret costs no scrypt run per token (nor a failed one against the new hash).
 */
export async function verifyClientSecret(secrets: VerifiedSecrets, clientId: string, secret: string, hashes: ClientSecretHashes): Promise<boolean> {
  return (await secretAcceptedUntil(secrets, clientId, secret, hashes)) !== undefined;
}

/**
 * Until when (ms since the epoch) `secret` is accepted: Infinity for the current secret, the end
 * of the grace for the previous one; undefined for neither. `beforeHashing` runs before any scrypt
 * run (once the secrets verified before did not match): a throttle refuses there, so that an app
 * sending a secret verified before is never slowed by someone else's wrong guesses.
 */
export async function secretAcceptedUntil(
  secrets: VerifiedSecrets,
  clientId: string,
  secret: string,
  hashes: ClientSecretHashes,
  beforeHashing?: () => void,
): Promise<number | undefined> {
  const id = clientCredentialId(clientId);
  const retiring = acceptedRetiringHash(hashes);
  if (secrets.known(id, secret, hashes.hash)) return Infinity;
  if (retiring !== undefined && secrets.known(retiringKey(clientId), secret, retiring)) return hashes.retiringUntil;
  beforeHashing?.();
  if (await secrets.verify(id, secret, hashes.hash)) return Infinity;
  return retiring !== undefined && (await secrets.verify(retiringKey(clientId), secret, retiring)) ? hashes.retiringUntil : undefined;
}

const HASH_FIELDS = { hash: true, retiringHash: true, retiringUntil: true } as const;

/** A client's secret hashes through the Prisma client (the embedded database's first read; PostgreSQL joins them to the client). */
export async function readClientSecretHashes(db: Database, clientId: string): Promise<ClientSecretHashes | undefined> {
  const row = await db.prisma.authCredential.findUnique({ where: { id: clientCredentialId(clientId) }, select: HASH_FIELDS });
  return row ? secretHashesOf(row.hash, row.retiringHash, row.retiringUntil?.getTime()) : undefined;
}

export function secretHashesOf(hash: string, retiringHash: string | null, retiringUntil: number | null | undefined): ClientSecretHashes {
  return retiringHash !== null && retiringUntil != null ? { hash, retiringHash, retiringUntil } : { hash };
}

/** What project admins read back on a ClientApplication. */
export interface ClientSecrets {
  secret: string;
  /** The previous secret, while it is still accepted. */
  retiringSecret?: string;
}

/** The secrets of clients, unsealed, by client id (one statement for all); clients without one are absent. */
export async function readClientSecrets(auth: AuthService, clientIds: readonly string[]): Promise<Map<string, ClientSecrets>> {
  const found = new Map<string, ClientSecrets>();
  if (clientIds.length === 0) return found;
  const rows = await auth.db.prisma.authCredential.findMany({
    where: { id: { in: [...new Set(clientIds)].map(clientCredentialId) } },
    select: { id: true, sealed: true, retiringSealed: true, retiringUntil: true },
  });
  const now = Date.now();
  for (const row of rows) {
    if (!row.sealed) continue;
    const secrets: ClientSecrets = { secret: unseal(auth.keys.sealingKey, row.sealed) };
    if (row.retiringSealed && row.retiringUntil && now < row.retiringUntil.getTime()) {
      secrets.retiringSecret = unseal(auth.keys.sealingKey, row.retiringSealed);
    }
    found.set(row.id.slice('ClientApplication/'.length), secrets);
  }
  return found;
}

/**
 * Makes a new secret current and the current one retiring for CLIENT_SECRET_GRACE_MS (a secret
 * retiring from an earlier rotation stops at once). With `expected` (Medplum's `secret` input), it
 * must be the current secret. The write is conditional on the hash read, so of two rotations at
 * once one wins and the other is 409 rather than retiring a secret nobody was given.
 */
export async function rotateClientSecret(auth: AuthService, clientId: string, expected?: string): Promise<void> {
  const id = clientCredentialId(clientId);
  const current = await auth.db.prisma.authCredential.findUnique({ where: { id }, select: { hash: true, sealed: true } });
  if (!current?.sealed) throw errors.conflict(`ClientApplication/${clientId} has no secret to rotate: set one with PUT`);
  if (expected !== undefined && !safeEqual(expected, unseal(auth.keys.sealingKey, current.sealed))) {
    throw errors.invalid('"secret" is not the current secret of this client', 'Parameters.parameter');
  }
  const secret = randomSecret();
  const hash = await hashSecret(secret);
  const retiringUntil = new Date(Date.now() + auth.config.clientSecretGraceMs);
  const data = { hash, sealed: seal(auth.keys.sealingKey, secret), retiringHash: current.hash, retiringSealed: current.sealed, retiringUntil };
  const written = await changeCredential(auth, clientId, current.hash, data);
  if (!written) throw errors.conflict(`The secret of ClientApplication/${clientId} changed while it was rotated: try again`);
  auth.secrets.remember(id, secret, hash);
  await auth.clientSecretChanged(clientId);
}

/** Ends the grace of the previous secret now (Medplum's `retiringSecret` input, which must name it). */
export async function retireClientSecret(auth: AuthService, clientId: string, retiringSecret: string): Promise<void> {
  const id = clientCredentialId(clientId);
  const current = await auth.db.prisma.authCredential.findUnique({ where: { id }, select: { hash: true, retiringSealed: true, retiringUntil: true } });
  const retiring = current?.retiringSealed && current.retiringUntil && Date.now() < current.retiringUntil.getTime() ? current.retiringSealed : undefined;
  if (!current || !retiring || !safeEqual(retiringSecret, unseal(auth.keys.sealingKey, retiring))) {
    throw errors.invalid('"retiringSecret" is not the retiring secret of this client', 'Parameters.parameter');
  }
  await changeCredential(auth, clientId, current.hash, { retiringHash: null, retiringSealed: null, retiringUntil: null });
  await auth.clientSecretChanged(clientId);
}

/** Updates a client's credential row if its hash is still `expectedHash`; this server's credential cache forgets it around the write. */
async function changeCredential(
  auth: AuthService,
  clientId: string,
  expectedHash: string,
  data: { hash?: string; sealed?: string; retiringHash: string | null; retiringSealed: string | null; retiringUntil: Date | null },
): Promise<boolean> {
  const id = clientCredentialId(clientId);
  auth.clientCredentials.forget(id);
  const { count } = await auth.db.prisma.authCredential.updateMany({ where: { id, hash: expectedHash }, data: { ...data, updatedAt: new Date() } });
  auth.clientCredentials.forget(id);
  return count > 0;
}
