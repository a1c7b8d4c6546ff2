import { randomBytes, randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import type { Database } from '../db/database.js';
import type { AuthKey } from '../generated/prisma/client.js';

export const SIGNING_ALGORITHM = 'ES256';
const SIGNING_SLOT = 'signing-es256';
const SEALING_SLOT = 'client-secret-aes';

export interface ServerKeys {
  /** Key id of the signing key, in every token header. */
  readonly kid: string;
  readonly privateKey: CryptoKey;
  /** Public keys by kid (every key ever stored verifies, so a rotation would not log anyone out). */
  readonly publicKeys: ReadonlyMap<string, CryptoKey>;
  /** The JWK Set served at /.well-known/jwks.json. */
  readonly jwks: { keys: JWK[] };
  /** AES-256 key sealing client secrets at rest. */
  readonly sealingKey: Buffer;
}

/**
 * Loads the server keys, generating them on first start. Generated keys are inserted with
 * `ON CONFLICT DO NOTHING` (createMany, skipDuplicates) and read back, so when two servers start at
 * once both use the winner's. Keys stay in memory afterwards: verifying a token needs no database
 * round trip. Read once per start, so through the generated Prisma client (src/db/database.ts).
 */
export async function loadServerKeys(db: Database): Promise<ServerKeys> {
  let rows = await readKeys(db);
  if (!rows.some((row) => row.slot === SIGNING_SLOT)) {
    const { privateKey, publicKey } = await generateKeyPair(SIGNING_ALGORITHM, { extractable: true });
    const kid = randomUUID();
    const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: SIGNING_ALGORITHM, use: 'sig' };
    await insertKey(db, SIGNING_SLOT, kid, JSON.stringify({ ...(await exportJWK(privateKey)), kid }), JSON.stringify(publicJwk));
  }
  if (!rows.some((row) => row.slot === SEALING_SLOT)) {
    await insertKey(db, SEALING_SLOT, randomUUID(), randomBytes(32).toString('base64url'), null);
  }
  rows = await readKeys(db);
  const signing = rows.find((row) => row.slot === SIGNING_SLOT)!;
  const sealing = rows.find((row) => row.slot === SEALING_SLOT)!;
  const publicJwks = rows.filter((row) => row.publicJwk !== null).map((row) => JSON.parse(row.publicJwk!) as JWK);
  const publicKeys = new Map<string, CryptoKey>();
  for (const jwk of publicJwks) publicKeys.set(jwk.kid!, (await importJWK(jwk, SIGNING_ALGORITHM)) as CryptoKey);
  return {
    kid: signing.kid,
    privateKey: (await importJWK(JSON.parse(signing.privateJwk) as JWK, SIGNING_ALGORITHM)) as CryptoKey,
    publicKeys,
    jwks: { keys: publicJwks },
    sealingKey: Buffer.from(sealing.privateJwk, 'base64url'),
  };
}

function readKeys(db: Database): Promise<Pick<AuthKey, 'slot' | 'kid' | 'privateJwk' | 'publicJwk'>[]> {
  return db.prisma.authKey.findMany({ select: { slot: true, kid: true, privateJwk: true, publicJwk: true } });
}

async function insertKey(db: Database, slot: string, kid: string, privateJwk: string, publicJwk: string | null): Promise<void> {
  await db.prisma.authKey.createMany({
    data: [{ slot, kid, algorithm: slot === SIGNING_SLOT ? SIGNING_ALGORITHM : 'A256GCM', privateJwk, publicJwk }],
    skipDuplicates: true,
  });
}
