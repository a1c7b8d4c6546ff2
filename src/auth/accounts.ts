import { TYPE_AND_ID } from '../fhir/ids.js';
import type { StorageServices } from '../storage/repository.js';
import type { Database, SqlExecutor } from '../db/database.js';
import type { Login, ProjectMembership, ResourceType, ResourceTypeMap, User } from '../fhir/resources.js';
import type { AuthCredential } from '../generated/prisma/client.js';
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

/**
 * The project a User is scoped to (Medplum's `User.project`: a patient signed up or invited to a
 * project), or undefined for a server-wide user (practitioners, admins). An email names at most
 * one User per scope (uniqueness.ts).
 */
export function userScope(user: Pick<User, 'project'>): string | undefined {
  return parseReference(user.project?.reference)?.[1];
}

/** The live Users with this email (case-insensitively), in every scope, oldest first. */
function usersByEmail(db: SqlExecutor, email: string): Promise<User[]> {
  return contents<'User'>(
    db,
    `SELECT content::text AS content FROM resource
     WHERE "resourceType" = 'User' AND NOT deleted AND lower(content->>'email') = lower($1)
     ORDER BY "lastUpdated", id`,
    [email],
  );
}

/** The User of this email in exactly this scope (a project id, or undefined: server-wide); account writes use it. */
export async function findUserInScope(db: SqlExecutor, email: string, projectId: string | undefined): Promise<User | undefined> {
  return (await usersByEmail(db, email)).find((user) => userScope(user) === projectId);
}

/**
 * The User a sign-in with this email means, as Medplum's getUserByEmail finds it: the User scoped
 * to `projectId` when one is named, else the server-wide one. Else, for Users made before emails
 * were scoped (Flint's invites scoped every new User to the inviting project, and reused it in
 * others), the only User of the email, whatever its scope. The sign-in then needs a membership of
 * the User in the project it names (chooseMembership): a User is never signed in to a project it
 * is not a member of.
 */
export async function findUserByEmail(db: SqlExecutor, email: string, projectId?: string): Promise<User | undefined> {
  const users = await usersByEmail(db, email);
  const scoped = projectId === undefined ? undefined : users.find((user) => userScope(user) === projectId);
  return scoped ?? users.find((user) => userScope(user) === undefined) ?? (users.length === 1 ? users[0] : undefined);
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

/**
 * The Logins of a user (or client) that may still back a token: not revoked, and younger than
 * `maxAgeSeconds` (the refresh token's lifetime; an older one backs nothing).
 */
export function liveLoginsOf(db: SqlExecutor, subject: string, maxAgeSeconds: number): Promise<Login[]> {
  return contents<'Login'>(
    db,
    `SELECT content::text AS content FROM resource
     WHERE "resourceType" = 'Login' AND NOT deleted AND content->'user'->>'reference' = $1
       AND content->>'revoked' IS DISTINCT FROM 'true' AND "lastUpdated" > now() - make_interval(secs => $2::float8)
     ORDER BY "lastUpdated", id`,
    [subject, maxAgeSeconds],
  );
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

/**
 * A row of auth_credential (password hash of a User, secret hash and sealed secret of a
 * ClientApplication). Reads and writes on their own go through the generated Prisma client;
 * a write inside an account or clone transaction goes on that transaction's adapter
 * (writeCredentialInTransaction), so it commits or rolls back with the resources; the secret-hash
 * read of each client_credentials token on PostgreSQL is part of one adapter statement
 * (token-endpoint.ts, findClient). See src/db/database.ts.
 */
export type Credential = Pick<AuthCredential, 'id' | 'projectId' | 'hash' | 'sealed'>;

const CREDENTIAL_FIELDS = { id: true, projectId: true, hash: true, sealed: true } as const;

export async function readCredential(db: Database, id: string): Promise<Credential | undefined> {
  return (await db.prisma.authCredential.findUnique({ where: { id }, select: CREDENTIAL_FIELDS })) ?? undefined;
}

/** Writes a credential; with `onlyIfAbsent`, keeps an existing one and reports whether it wrote. */
export async function writeCredential(db: Database, credential: Credential, onlyIfAbsent = false): Promise<boolean> {
  if (onlyIfAbsent) {
    // INSERT ... ON CONFLICT DO NOTHING: two servers starting together write one.
    return (await db.prisma.authCredential.createMany({ data: [credential], skipDuplicates: true })).count > 0;
  }
  // Only the primary key in `where` and no nested writes: Prisma sends one INSERT ... ON CONFLICT.
  // A secret set anew ends the grace of one rotated out before it ($rotate-secret).
  const { id, ...fields } = credential;
  const update = { ...fields, ...NO_RETIRING_SECRET, updatedAt: new Date() };
  await db.prisma.authCredential.upsert({ where: { id }, create: credential, update, select: { id: true } });
  return true;
}

const NO_RETIRING_SECRET = { retiringHash: null, retiringSealed: null, retiringUntil: null } as const;

/** writeCredential (upsert) in a transaction of resource writes, on its adapter. */
export async function writeCredentialInTransaction(tx: SqlExecutor, credential: Credential): Promise<void> {
  await tx.execute(
    `INSERT INTO auth_credential (id, "projectId", hash, sealed) VALUES ($1, $2, $3, $4)
     ON CONFLICT (id) DO UPDATE SET hash = EXCLUDED.hash, sealed = EXCLUDED.sealed, "projectId" = EXCLUDED."projectId",
       "retiringHash" = NULL, "retiringSealed" = NULL, "retiringUntil" = NULL, "updatedAt" = now()`,
    [credential.id, credential.projectId, credential.hash, credential.sealed],
  );
}

/**
 * The stored hashes a client secret is checked against: the current secret's and, after
 * ClientApplication/$rotate-secret, the previous one's until `retiringUntil` (ms since the epoch).
 */
export interface ClientSecretHashes {
  hash: string;
  retiringHash?: string;
  retiringUntil?: number;
}

/**
 * Stored hashes of client secrets by credential id, kept in memory only when this server is its
 * database's one writer (the embedded database: one process opens it), where every change of a
 * credential goes through this process and calls `forget`. With PostgreSQL several servers may
 * change a secret, so it reads the database every time. A read that was in flight when a
 * credential changed does not store what it read (generation check).
 */
export class CredentialCache {
  private readonly hashes = new Map<string, ClientSecretHashes>();
  private generation = 0;

  constructor(
    readonly enabled: boolean,
    private readonly capacity = 10_000,
  ) {}

  get(id: string): ClientSecretHashes | undefined {
    return this.enabled ? this.hashes.get(id) : undefined;
  }

  /** The current generation, to pass to `fill` with what a read started now returns. */
  get current(): number {
    return this.generation;
  }

  fill(id: string, hash: ClientSecretHashes, readAt: number): void {
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
