import { createHash, randomUUID } from 'node:crypto';
import type { SqlExecutor } from '../db/database.js';
import { errors } from '../fhir/outcome.js';
import { type Project, type ProjectMembership, type Reference, type ResourceType, type ResourceTypeMap, type User } from '../fhir/resources.js';
import { asResourceOf } from '../fhir/typed-resources.js';
import { compact, type Resource } from '../fhir/types.js';
import { isUniqueViolation } from '../storage/db-errors.js';
import { writeHookOf } from '../storage/write-hooks.js';
import { insertFirstVersion } from '../storage/sql.js';
import { validateResource } from '../validation/validator.js';
import { findUserInScope, parseReference, readCredential, writeCredential, writeCredentialInTransaction } from './accounts.js';
import { hashSecret, randomSecret, seal, unseal } from './secrets.js';
import type { AuthService } from './service.js';
import { lockKeys, lockValue } from './uniqueness.js';

/** A UUID-shaped id derived from a name: the same on every server, so bootstrap is idempotent. */
export function stableId(name: string): string {
  const hex = createHash('sha256').update(`flint:${name}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}


/** Stores a client secret: scrypt hash to verify it, sealed copy so project admins can read it. */
export async function storeClientSecret(auth: AuthService, clientId: string, projectId: string, secret: string): Promise<void> {
  const hash = await hashSecret(secret);
  const id = `ClientApplication/${clientId}`;
  auth.clientCredentials.forget(id);
  await writeCredential(auth.db, { id, projectId, hash, sealed: seal(auth.keys.sealingKey, secret) });
  auth.clientCredentials.forget(id);
  auth.secrets.remember(id, secret, hash);
  await auth.clientSecretChanged(clientId);
}

export async function readClientSecret(auth: AuthService, clientId: string): Promise<string | undefined> {
  const credential = await readCredential(auth.db, `ClientApplication/${clientId}`);
  return credential?.sealed ? unseal(auth.keys.sealingKey, credential.sealed) : undefined;
}

export async function storePassword(auth: AuthService, userId: string, projectId: string, password: string): Promise<void> {
  const hash = await hashSecret(password);
  await writeCredential(auth.db, { id: `User/${userId}`, projectId, hash, sealed: null });
}

/** Writes a resource with a given id in a project (update-as-create: idempotent, race-safe). */
export async function put<K extends ResourceType>(
  auth: AuthService,
  projectId: string,
  resource: ResourceTypeMap[K] & { resourceType: K; id: string },
): Promise<ResourceTypeMap[K] & { id: string }> {
  const result = await auth.repo(projectId).updateResource(resource.resourceType, resource.id, compact(resource));
  return { ...asResourceOf(result.resource, resource.resourceType), id: resource.id };
}

export interface NewProject {
  id?: string;
  name: string;
  /** The owner: gets an admin membership with a Practitioner profile. */
  owner?: { userId: string; firstName?: string; lastName?: string };
  superAdmin?: boolean;
}

export interface CreatedProject {
  project: Project & { id: string };
  ownerMembership?: ProjectMembership;
  client: { id: string; secret: string; membership: ProjectMembership };
}

/** A client secret ready to store: hashed and sealed before any transaction opens (scrypt is slow). */
export interface PreparedSecret {
  secret: string;
  hash: string;
  sealed: string;
}

export async function prepareClientSecret(auth: AuthService, secret: string = randomSecret()): Promise<PreparedSecret> {
  return { secret, hash: await hashSecret(secret), sealed: seal(auth.keys.sealingKey, secret) };
}

/**
 * Account writes that commit or roll back together (Project/$init, invite): every resource and
 * credential goes through one transaction, so a failure part-way leaves nothing behind. Only new
 * resources are written (fresh ids), each validated, stamped and indexed as the repository would,
 * with its type's write hook run in the transaction. Inside, read only through `tx` (PGlite has
 * one connection: a query on the outer database would wait for this transaction forever).
 */
export class AccountWrites {
  private readonly afterCommit: (() => void)[] = [];

  constructor(
    readonly auth: AuthService,
    readonly tx: SqlExecutor,
  ) {}

  /**
   * Serialises the transactions that name the same key until they end (a PostgreSQL advisory
   * lock held to commit or rollback): a check-then-create under it cannot race.
   */
  lock(key: string): Promise<void> {
    return lockValue(this.tx, key);
  }

  /** Creates a resource with a new id in a project; an id already taken is 409. */
  async create<K extends ResourceType>(
    projectId: string,
    resource: ResourceTypeMap[K] & { resourceType: K; id: string },
  ): Promise<ResourceTypeMap[K] & { id: string }> {
    const input: unknown = compact(resource);
    validateResource(input, { expectedType: resource.resourceType });
    const { resourceType, id, meta, ...rest } = input;
    const stamped: Resource = {
      resourceType,
      id,
      meta: { ...meta, versionId: randomUUID(), lastUpdated: new Date().toISOString(), project: projectId },
      ...rest,
    };
    try {
      await insertFirstVersion(this.tx, stamped);
    } catch (error) {
      if (isUniqueViolation(error)) throw errors.conflict(`${resourceType}/${id} already exists`);
      throw error;
    }
    await writeHookOf(resourceType)?.(this.tx, { resourceType, id: resource.id, projectId, resource: stamped });
    this.afterCommit.push(() => this.auth.searchCache?.written(projectId, resourceType));
    return { ...asResourceOf(stamped, resource.resourceType), id: resource.id };
  }

  async storeClientSecret(clientId: string, projectId: string, prepared: PreparedSecret): Promise<void> {
    const id = `ClientApplication/${clientId}`;
    this.auth.clientCredentials.forget(id);
    await writeCredentialInTransaction(this.tx, { id, projectId, hash: prepared.hash, sealed: prepared.sealed });
    this.afterCommit.push(() => {
      this.auth.clientCredentials.forget(id);
      this.auth.secrets.remember(id, prepared.secret, prepared.hash);
    });
  }

  /** Stores a password hash (from hashSecret, computed before the transaction). */
  async storePasswordHash(userId: string, projectId: string, hash: string): Promise<void> {
    await writeCredentialInTransaction(this.tx, { id: `User/${userId}`, projectId, hash, sealed: null });
  }

  /**
   * The User with this email in the scope `fields.project` names (a project-scoped user, or without
   * it a server-wide one), created (stored in `projectId`) when that scope has none. Under a lock
   * on the email, so concurrent account writes naming one new email create one User.
   */
  async userByEmail(
    email: string,
    projectId: string,
    fields: { firstName: string; lastName: string; project?: Reference },
  ): Promise<{ user: User & { id: string }; created: boolean }> {
    await this.lock(lockKeys.email(email));
    const existing = await findUserInScope(this.tx, email, parseReference(fields.project?.reference)?.[1]);
    if (existing) return { user: { ...existing, id: existing.id! }, created: false };
    const user = await this.create(projectId, { resourceType: 'User', id: randomUUID(), ...fields, email });
    return { user, created: true };
  }

  /**
   * A new Project (`strictMode: true`), its owner's admin membership with a Practitioner profile,
   * and the default ClientApplication with a secret and its own admin membership (DESIGN 5).
   */
  async createProject(request: NewProject, clientSecret: PreparedSecret): Promise<CreatedProject> {
    const projectId = request.id ?? randomUUID();
    const project = await this.create(projectId, {
      resourceType: 'Project',
      id: projectId,
      name: request.name,
      strictMode: true,
      ...(request.superAdmin ? { superAdmin: true } : {}),
      ...(request.owner ? { owner: { reference: `User/${request.owner.userId}` } } : {}),
    });
    let ownerMembership: ProjectMembership | undefined;
    if (request.owner) {
      const first = request.owner.firstName ?? 'Project';
      const last = request.owner.lastName ?? 'Admin';
      const practitioner = await this.create(projectId, {
        resourceType: 'Practitioner',
        id: randomUUID(),
        name: [{ given: [first], family: last }],
      });
      ownerMembership = await this.create(projectId, {
        resourceType: 'ProjectMembership',
        id: randomUUID(),
        project: { reference: `Project/${projectId}`, display: request.name },
        user: { reference: `User/${request.owner.userId}`, display: `${first} ${last}` },
        profile: { reference: `Practitioner/${practitioner.id}`, display: `${first} ${last}` },
        userName: `${first} ${last}`,
        admin: true,
      });
    }
    const client = await this.createClientApplication(projectId, `${request.name} Default Client`, clientSecret, { admin: true });
    return { project, ownerMembership, client };
  }

  /** A ClientApplication with the prepared secret and a membership in its project. */
  async createClientApplication(
    projectId: string,
    name: string,
    secret: PreparedSecret,
    options: { admin?: boolean; id?: string } = {},
  ): Promise<CreatedProject['client']> {
    const clientId = options.id ?? randomUUID();
    await this.create(projectId, { resourceType: 'ClientApplication', id: clientId, name });
    await this.storeClientSecret(clientId, projectId, secret);
    const membership = await this.create(projectId, {
      resourceType: 'ProjectMembership',
      id: stableId(`client-membership:${clientId}`),
      project: { reference: `Project/${projectId}` },
      user: { reference: `ClientApplication/${clientId}`, display: name },
      profile: { reference: `ClientApplication/${clientId}`, display: name },
      userName: name,
      admin: options.admin === true,
    });
    return { id: clientId, secret: secret.secret, membership };
  }

  /** Runs after commit: in-memory state (the verified-secret cache) never sees rolled-back writes. */
  committed(): void {
    for (const effect of this.afterCommit.splice(0)) effect();
  }
}

/** Runs `work` in one transaction of account writes; effects on memory follow the commit. */
export async function withAccountWrites<T>(auth: AuthService, work: (writes: AccountWrites) => Promise<T>): Promise<T> {
  let writes: AccountWrites | undefined;
  const result = await auth.db.transaction((tx) => {
    writes = new AccountWrites(auth, tx);
    return work(writes);
  });
  writes?.committed();
  return result;
}

/**
 * A new Project with its owner's membership and its default ClientApplication (see
 * AccountWrites.createProject), all in one transaction.
 */
export async function createProject(auth: AuthService, request: NewProject): Promise<CreatedProject> {
  const secret = await prepareClientSecret(auth);
  return withAccountWrites(auth, (writes) => writes.createProject(request, secret));
}
