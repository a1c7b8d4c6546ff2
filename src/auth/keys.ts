import { randomBytes, randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import type { Database } from '../db/database.js';

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

interface KeyRow {
  slot: string;
  kid: string;
  privateJwk: string;
  publicJwk: string | null;
}

/**
 * Loads the server keys, generating them on first start. Generated keys are inserted with
 * `ON CONFLICT DO NOTHING` and read back, so when two servers start at once both use the winner's.
 * Keys stay in memory afterwards: verifying a token needs no database round trip.
 */
export async function loadServerKeys(db: Database): Promise<ServerKeys> {
  let rows = await db.query<KeyRow>('SELECT slot, kid, "privateJwk", "publicJwk" FROM auth_key');
  if (!rows.some((row) => row.slot === SIGNING_SLOT)) {
    const { privateKey, publicKey } = await generateKeyPair(SIGNING_ALGORITHM, { extractable: true });
    const kid = randomUUID();
    const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: SIGNING_ALGORITHM, use: 'sig' };
    await insertKey(db, SIGNING_SLOT, kid, JSON.stringify({ ...(await exportJWK(privateKey)), kid }), JSON.stringify(publicJwk));
  }
  if (!rows.some((row) => row.slot === SEALING_SLOT)) {
    await insertKey(db, SEALING_SLOT, randomUUID(), randomBytes(32).toString('base64url'), null);
  }
  rows = await db.query<KeyRow>('SELECT slot, kid, "privateJwk", "publicJwk" FROM auth_key');
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

async function insertKey(db: Database, slot: string, kid: string, privateJwk: string, publicJwk: string | null): Promise<void> {
  await db.execute(
    `INSERT INTO auth_key (slot, kid, algorithm, "privateJwk", "publicJwk") VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (slot) DO NOTHING`,
    [slot, kid, slot === SIGNING_SLOT ? SIGNING_ALGORITHM : 'A256GCM', privateJwk, publicJwk],
  );
}
