import { createCipheriv, createDecipheriv, createHash, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

/**
 * Passwords and client secrets are stored as scrypt hashes (`scrypt$N$r$p$salt$hash`) and compared
 * in constant time. N = 2^14, r = 8: about 16 MiB and deliberately slow CPU work per hash, run on
 * the libuv thread pool so the event loop keeps serving.
 */
const N = 16_384;
const R = 8;
const P = 1;
const KEY_LENGTH = 32;

function scryptAsync(secret: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(secret, salt, KEY_LENGTH, { N: n, r, p, maxmem: 64 * 1024 * 1024 }, (error, key) => (error ? reject(error) : resolve(key))),
  );
}

export async function hashSecret(secret: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptAsync(secret, salt, N, R, P);
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

export async function verifySecret(secret: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [n, r, p] = parts.slice(1, 4).map(Number);
  const expected = Buffer.from(parts[5], 'base64url');
  const actual = await scryptAsync(secret, Buffer.from(parts[4], 'base64url'), n, r, p);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** A random secret for clients and refresh tokens: 32 bytes, hex. */
export function randomSecret(bytes = 32): string {
  return randomBytes(bytes).toString('hex');
}

export function sha256(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

export function sha256Base64Url(value: string): string {
  return createHash('sha256').update(value).digest('base64url');
}

/** Constant-time equality of two strings (compared through their SHA-256 so lengths never leak). */
export function safeEqual(a: string, b: string): boolean {
  return timingSafeEqual(sha256(a), sha256(b));
}

/**
 * Remembers secrets already verified against a given stored hash, keyed by the SHA-256 of the
 * secret: a client presenting the same secret again skips scrypt (token issue is a hot path).
 * A changed hash (new secret) never matches an old entry.
 */
export class VerifiedSecrets {
  private readonly entries = new Map<string, { hash: string; digest: Buffer }>();

  constructor(private readonly capacity = 10_000) {}

  async verify(id: string, secret: string, storedHash: string): Promise<boolean> {
    if (this.known(id, secret, storedHash)) return true;
    if (!(await verifySecret(secret, storedHash))) return false;
    this.remember(id, secret, storedHash);
    return true;
  }

  /** Whether this secret was verified against this stored hash before (no scrypt: a miss says nothing). */
  known(id: string, secret: string, storedHash: string): boolean {
    const known = this.entries.get(id);
    return known !== undefined && known.hash === storedHash && timingSafeEqual(known.digest, sha256(secret));
  }

  /** Records a secret this process has just hashed itself. */
  remember(id: string, secret: string, storedHash: string): void {
    if (this.entries.size >= this.capacity) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(id, { hash: storedHash, digest: sha256(secret) });
  }
}

/** AES-256-GCM: `iv.tag.ciphertext` in base64url. */
export function seal(key: Buffer, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return [iv, cipher.getAuthTag(), data].map((part) => part.toString('base64url')).join('.');
}

export function unseal(key: Buffer, sealed: string): string {
  const [iv, tag, data] = sealed.split('.').map((part) => Buffer.from(part, 'base64url'));
  const decipher = createDecipheriv('aes-256-gcm', key, iv);
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(data), decipher.final()]).toString('utf8');
}
