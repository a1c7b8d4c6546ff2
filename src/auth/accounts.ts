import { TYPE_AND_ID } from '../fhir/ids.js';
import type { StorageServices } from '../storage/repository.js';
import type { SqlExecutor } from '../db/database.js';
import type { ProjectMembership, ResourceType, ResourceTypeMap, User } from '../fhir/resources.js';
import { Repository } from '../storage/repository.js';

/**
 * Accounts are ordinary resources (User, Project, ProjectMembership, ClientApplication, Login,
 * AccessPolicy). Authentication reads and writes them as the system: across every project, writing
 * into the project it names.
 */
export function systemRepository(services: StorageServices, projectId: string): Repository {
  return new Repository(services, { projectId, superAdmin: true });
}

/** `Type/id` → [Type, id]. */
export function parseReference(reference: string | undefined): [string, string] | undefined {
  const match = TYPE_AND_ID.exec(reference ?? '');
  return match ? [match[1], match[2]] : undefined;
}

/**
 * Stored resources of type K (the SQL selects that type): every stored resource passed validation
 * against the definitions its generated type comes from.
 */
async function contents<K extends ResourceType>(db: SqlExecutor, sql: string, args: unknown[]): Promise<ResourceTypeMap[K][]> {
  const rows = await db.query<{ content: string }>(sql, args);
  return rows.map((row) => JSON.parse(row.content) as ResourceTypeMap[K]);
}

/** Users are server-wide: an email names one User whatever project holds it. */
export async function findUserByEmail(db: SqlExecutor, email: string): Promise<User | undefined> {
  const users = await contents<'User'>(
    db,
    `SELECT content::text AS content FROM resource
     WHERE "resourceType" = 'User' AND NOT deleted AND lower(content->>'email') = lower($1)
     ORDER BY "lastUpdated", id LIMIT 1`,
    [email],
  );
  return users[0];
}

/** Active memberships whose `field` (user, profile) references `reference`. */
export function membershipsReferencing(db: SqlExecutor, field: 'user' | 'profile', reference: string): Promise<ProjectMembership[]> {
  return contents<'ProjectMembership'>(
    db,
    `SELECT content::text AS content FROM resource
     WHERE "resourceType" = 'ProjectMembership' AND NOT deleted AND content->($1::text)->>'reference' = $2
     ORDER BY "lastUpdated"`,
    [field, reference],
  ).then((list) => list.filter((m) => m.active !== false));
}

/** Memberships carrying an externalId, in every project (SPEC 5 rule 7: it must be unique). */
export function membershipsByExternalId(db: SqlExecutor, externalId: string, projectId?: string): Promise<ProjectMembership[]> {
  return contents<'ProjectMembership'>(
    db,
    `SELECT content::text AS content FROM resource
     WHERE "resourceType" = 'ProjectMembership' AND NOT deleted AND content->>'externalId' = $1
       AND ($2::text IS NULL OR "projectId" = $2::text)`,
    [externalId, projectId ?? null],
  ).then((list) => list.filter((m) => m.active !== false));
}

/** Reads one resource as the system, as its generated type; undefined when absent or deleted. */
export async function readAny<K extends ResourceType>(db: SqlExecutor, resourceType: K, id: string): Promise<ResourceTypeMap[K] | undefined> {
  const list = await contents<K>(
    db,
    'SELECT content::text AS content FROM resource WHERE "resourceType" = $1 AND id = $2 AND NOT deleted',
    [resourceType, id],
  );
  return list[0];
}

export interface Credential {
  id: string;
  projectId: string;
  hash: string;
  sealed: string | null;
}

export async function readCredential(db: SqlExecutor, id: string): Promise<Credential | undefined> {
  const rows = await db.query<Credential>('SELECT id, "projectId", hash, sealed FROM auth_credential WHERE id = $1', [id]);
  return rows[0];
}

/** Writes a credential; with `onlyIfAbsent`, keeps an existing one and reports whether it wrote. */
export async function writeCredential(db: SqlExecutor, credential: Credential, onlyIfAbsent = false): Promise<boolean> {
  const conflict = onlyIfAbsent
    ? 'DO NOTHING'
    : 'DO UPDATE SET hash = EXCLUDED.hash, sealed = EXCLUDED.sealed, "projectId" = EXCLUDED."projectId", "updatedAt" = now()';
  const count = await db.execute(
    `INSERT INTO auth_credential (id, "projectId", hash, sealed) VALUES ($1, $2, $3, $4) ON CONFLICT (id) ${conflict}`,
    [credential.id, credential.projectId, credential.hash, credential.sealed],
  );
  return count > 0;
}

/**
 * Stored hashes of client secrets by credential id, kept in memory only when this server is its
 * database's one writer (the embedded database: one process opens it), where every change of a
 * credential goes through this process and calls `forget`. With PostgreSQL several servers may
 * change a secret, so it reads the database every time. A read that was in flight when a
 * credential changed does not store what it read (generation check).
 */
export class CredentialCache {
  private readonly hashes = new Map<string, string>();
  private generation = 0;

  constructor(
    readonly enabled: boolean,
    private readonly capacity = 10_000,
  ) {}

  get(id: string): string | undefined {
    return this.enabled ? this.hashes.get(id) : undefined;
  }

  /** The current generation, to pass to `fill` with what a read started now returns. */
  get current(): number {
    return this.generation;
  }

  fill(id: string, hash: string, readAt: number): void {
    if (!this.enabled || readAt !== this.generation) return;
    if (this.hashes.size >= this.capacity) this.hashes.delete(this.hashes.keys().next().value!);
    this.hashes.set(id, hash);
  }

  /** After (and, inside a transaction, also before commit of) any write of the credential. */
  forget(id: string): void {
    this.generation++;
    this.hashes.delete(id);
  }
}
