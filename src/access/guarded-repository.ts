import type { Services } from '../operations/context.js';
import type { Identity } from '../identity/identity.js';
import { errors } from '../fhir/outcome.js';
import type { SqlExecutor } from '../db/database.js';
import { JoinedTransaction } from '../db/joined-transaction.js';
import { systemRepository } from '../auth/accounts.js';
import { createBotMembership } from '../bots/membership.js';
import type { ReadSession } from '../cache/read-your-writes.js';
import { type Resource, isRecord } from '../fhir/types.js';
import { Repository, type StorageServices } from '../storage/repository.js';
import { parseStored } from '../storage/versions.js';
import { isBotCode, seesBotCode, withoutBotCode } from '../storage/bot-code.js';
import type { BinaryStream } from '../storage/binary-storage.js';
import {
  ItemError,
  isPrepared,
  keyOf,
  type NewResource,
  type PreparedCreates,
  type PreparedWrite,
  type HistoryOptions,
  type HistoryPage,
  type ReadKey,
  type ResourceKey,
  type ResourceRepository,
  type StoredVersion,
  type VersionKey,
  type WriteOptions,
  type WriteResult,
} from '../storage/types.js';
import { randomSecret } from '../auth/secrets.js';
import { readClientSecret, storeClientSecret } from '../auth/account-writes.js';
import { readClientSecrets } from '../auth/client-secrets.js';
import { mayHoldSecrets, withClientSecrets } from './client-secrets.js';
import { policyAllowsType, policyCriteria } from '../identity/policy.js';
import type { Permission } from '../identity/scopes.js';
import { assertScope, assertTypeAccess } from './type-access.js';
import { systemHistoryOptions } from './system-history.js';
import { judgedVersions } from './version-criteria.js';
import { decideAccounts } from './write-accounts.js';
import { withSubscriptionAuthors } from './subscription-author.js';
import { assertProtectedElementsKept, isServerWide, serverWideUserRefusal } from './protected-elements.js';
import { search, searchServicesFor, type SearchContext } from '../search/service.js';
import { criteriaVerdicts, idsWithinCriteria } from './criteria-verdicts.js';

/**
 * The repository of a request: the project-scoped store plus access control (admin-only types,
 * the membership's AccessPolicy), and ClientApplication secrets, which are never stored in the
 * resource: they are sealed beside it and shown to project admins only. It holds the store and
 * implements every method of ResourceRepository itself, so none reaches the store unguarded.
 */
export class GuardedRepository implements ResourceRepository {
  /** The identity as each SMART permission sees it (itself without resource scopes). */
  private readonly as: (permission: Permission) => Identity;
  // Both made on first use: a plain read needs only the store, and a request may make no call.
  private storeMade?: Repository;
  private creatorMade?: Repository;

  constructor(
    private readonly services: Services,
    private readonly who: Identity,
    /** Where the request's reads go (a read replica) and its writes (the primary). */
    private readonly reads: ReadSession,
    /** The transaction every statement joins (a transaction Bundle's entries). */
    private readonly joined?: JoinedTransaction,
  ) {
    this.as = scopedIdentities(who);
  }

  /** Reads, updates and patches; writes are checked against the criteria of `u` scopes. */
  private get store(): Repository {
    return (this.storeMade ??= this.repositoryAs('u'));
  }

  /** Creates: checked against the criteria of `c` scopes (the store itself without SMART scopes). */
  private get creator(): Repository {
    return (this.creatorMade ??= this.who.scopes ? this.repositoryAs('c') : this.store);
  }

  private repositoryAs(permission: Permission): Repository {
    const { services, who, reads, joined } = this;
    const storage = joined ? storageOf(services, joined) : storageOf(services, reads.primary, () => reads.reader());
    const writer = this.as(permission);
    return new Repository(storage, who, {
      appliesTo: (resourceType: string) => policyCriteria(writer, resourceType) !== undefined,
      verify: (tx: SqlExecutor, resource: Resource) => this.verifyWrite(tx, resource, writer),
      prepare: async (db: SqlExecutor, writes: readonly PreparedWrite[]) => {
        assertProtectedElementsKept(who, writes);
        return withSubscriptionAuthors(who, await decideAccounts(who, db, writes, joined ? undefined : services.searchCache));
      },
    });
  }

  get cachesVersions(): boolean {
    return this.store.cachesVersions;
  }

  async readVersion(resourceType: string, id: string): Promise<StoredVersion> {
    assertTypeAccess(this.who, resourceType, 'read');
    assertScope(this.who, resourceType, 'r');
    this.assertJoinable(resourceType);
    let version = await this.store.readVersion(resourceType, id);
    // Each check is awaited only when it has work to do: most reads have neither.
    const judged = this.versionWithinCriteria(resourceType, id, 'r');
    if (judged) version = await this.judgedVersion(version, await judged);
    const botCode = this.assertNotBotCode(resourceType, id);
    if (botCode) await botCode;
    return mayHoldSecrets(resourceType) ? (await withClientSecrets(this.services, this.who, [version]))[0] : version;
  }

  /**
   * The id of the resource's current version on the primary when the reader's criteria for its type
   * admit it, else undefined. One search decides both, so they are of one snapshot: reading the
   * version and then searching could judge a version written in between.
   */
  async currentVersionWithinCriteria(resourceType: string, id: string): Promise<string | undefined> {
    const result = await search(searchServicesFor(this.searchContext(this.as('r'), 'primary')), resourceType, [
      ['_id', id],
      ['_count', '1'],
    ]);
    return result.matches[0]?.versionId;
  }

  async readResource(resourceType: string, id: string): Promise<Resource> {
    return parseStored(await this.readVersion(resourceType, id));
  }

  /**
   * Batched reads under readVersion's rules: types the AccessPolicy does not allow and resources
   * outside its criteria are left out like missing ones (never an error: the caller of a batch,
   * a reference, must not learn that a hidden target exists). Criteria cost one search per type
   * that has them, whatever the number of keys. SMART scopes must grant `r` on the type.
   */
  async readVersions(keys: readonly ReadKey[]): Promise<Map<string, StoredVersion>> {
    const reader = this.as('r');
    const found = await this.store.readVersions(keys.filter((key) => policyAllowsType(reader, key.resourceType)));
    const within = await this.asJudgedWithinCriteria([...found.values()], reader);
    const shown = await withClientSecrets(this.services, this.who, await withoutBotCode(this.primary, this.who, within));
    return new Map(shown.map((version) => [keyOf(version), version]));
  }

  /** Texts of versions a search found: only of types the policy allows, and within its criteria (ClientApplications as read shows them). */
  async readVersionTexts(versions: readonly VersionKey[]): Promise<Map<string, string>> {
    const allowed = await withoutBotCode(this.primary, this.who, versions.filter((version) => policyAllowsType(this.who, version.resourceType)));
    const texts = await this.store.readVersionTexts(allowed);
    for (const hidden of await this.outsideCriteria(allowed, this.who)) texts.delete(hidden.versionId);
    const clients = allowed.flatMap((version) => {
      const text = texts.get(version.versionId);
      return mayHoldSecrets(version.resourceType) && text !== undefined ? [{ ...version, text }] : [];
    });
    for (const client of await withClientSecrets(this.services, this.who, clients)) texts.set(client.versionId, client.text);
    return texts;
  }

  async readHistoryVersion(resourceType: string, id: string, versionId: string): Promise<StoredVersion> {
    assertTypeAccess(this.who, resourceType, 'vread');
    assertScope(this.who, resourceType, 'r');
    const version = await this.store.readHistoryVersion(resourceType, id, versionId);
    const current = await this.versionWithinCriteria(resourceType, id, 'r');
    if (current !== undefined && (await judgedVersions(this.primary, this.as('r'), [version], current)).length === 0) {
      throw errors.notFound(`Version ${versionId} of ${resourceType}/${id} not found`);
    }
    await this.assertNotBotCode(resourceType, id);
    return resourceType === 'Project' ? (await withClientSecrets(this.services, this.who, [version]))[0] : version;
  }

  async history(resourceType: string | undefined, id: string | undefined, options: HistoryOptions): Promise<HistoryPage> {
    if (resourceType === undefined) return this.projectsAsSeen(await this.store.history(undefined, id, systemHistoryOptions(this.as('r'), options)));
    assertTypeAccess(this.who, resourceType, 'history');
    assertScope(this.who, resourceType, 'r');
    if (id === undefined && policyCriteria(this.as('r'), resourceType)) {
      throw errors.forbidden(`Your access policy or SMART scopes narrow ${resourceType} by criteria: read its history per resource`);
    }
    const current = id === undefined ? undefined : await this.versionWithinCriteria(resourceType, id, 'r');
    if (id !== undefined) await this.assertNotBotCode(resourceType, id);
    const page = await this.store.history(resourceType, id, options);
    if (current === undefined) return this.projectsAsSeen(page);
    const versions = await judgedVersions(this.primary, this.as('r'), page.versions, current);
    return this.projectsAsSeen(versions.length === page.versions.length ? page : { ...page, versions });
  }

  /**
   * A history page as the caller may see it: Project versions with their secrets for admins only,
   * and without the versions of Bot code Binaries for anyone else (a page may then hold fewer).
   */
  private async projectsAsSeen(page: HistoryPage): Promise<HistoryPage> {
    const versions = await withoutBotCode(this.primary, this.who, page.versions);
    if (versions.length !== page.versions.length) page = { ...page, versions };
    const projects = page.versions.filter((version) => version.resourceType === 'Project');
    if (projects.length === 0) return page;
    const shown = new Map((await withClientSecrets(this.services, this.who, projects)).map((version) => [version.versionId, version.text]));
    return { ...page, versions: page.versions.map((version) => (shown.has(version.versionId) ? { ...version, text: shown.get(version.versionId)! } : version)) };
  }

  async createResource(resourceType: string, input: unknown, id?: string): Promise<WriteResult> {
    assertTypeAccess(this.who, resourceType, 'create');
    assertScope(this.who, resourceType, 'c');
    this.assertJoinable(resourceType);
    this.checkMembership(resourceType, input);
    if (resourceType === 'Bot') return this.createBot(input, id);
    if (resourceType !== 'ClientApplication' || !isRecord(input)) return this.creator.createResource(resourceType, input, id);
    // `retiringSecret` is shown by reads only ($rotate-secret sets it): a read sent back is not stored with it.
    const { secret, retiringSecret: _shownOnly, ...rest } = input;
    const result = await this.creator.createResource(resourceType, rest, id);
    return this.attachSecret(result, typeof secret === 'string' && secret !== '' ? secret : randomSecret());
  }

  async createResources(input: readonly NewResource[] | PreparedCreates): Promise<WriteResult[]> {
    this.assertMayCreate(isPrepared(input) ? input.items : input);
    const results = await this.creator.createResources(input);
    for (const { resource } of results) if (resource.resourceType === 'Bot') await this.botMembership(resource);
    return results;
  }

  /** A Bot and the ProjectMembership it acts through (as Medplum makes it), in one transaction. */
  private async createBot(input: unknown, id?: string): Promise<WriteResult> {
    if (!this.joined) {
      return JoinedTransaction.run(this.reads.primary, this.services.db.kind, (joined) => new GuardedRepository(this.services, this.who, this.reads, joined).createResource('Bot', input, id));
    }
    const result = await this.creator.createResource('Bot', input, id);
    await this.botMembership(result.resource);
    return result;
  }

  private async botMembership(bot: Resource): Promise<void> {
    const db = this.joined ?? this.reads.primary;
    const projectId = bot.meta!.project!;
    await createBotMembership(systemRepository({ ...this.services, db }, projectId), projectId, bot.id!);
  }

  async prepareCreates(items: readonly NewResource[]): Promise<PreparedCreates> {
    this.assertMayCreate(items);
    return this.creator.prepareCreates(items);
  }

  private assertMayCreate(items: readonly NewResource[]): void {
    items.forEach((item, index) => {
      try {
        assertTypeAccess(this.who, item.resourceType, 'create');
        assertScope(this.who, item.resourceType, 'c');
        if (item.resourceType === 'ClientApplication') throw errors.invalid('ClientApplications are created one at a time, with their secret');
        this.checkMembership(item.resourceType, item.input);
      } catch (error) {
        throw new ItemError(index, error);
      }
    });
  }

  async updateResource(resourceType: string, id: string, input: unknown, options: WriteOptions = {}): Promise<WriteResult> {
    assertTypeAccess(this.who, resourceType, 'update');
    assertScope(this.who, resourceType, 'u');
    this.assertJoinable(resourceType);
    this.checkMembership(resourceType, input);
    await this.assertExistingWithinCriteria(resourceType, id, 'u');
    await this.assertNotBotCode(resourceType, id);
    if (resourceType !== 'ClientApplication' || !isRecord(input)) return this.store.updateResource(resourceType, id, input, options);
    const { secret, retiringSecret: _shownOnly, ...rest } = input;
    const result = await this.store.updateResource(resourceType, id, rest, options);
    const existing = await readClientSecret(this.services.auth, id);
    const next = typeof secret === 'string' && secret !== '' ? secret : existing ?? randomSecret();
    return this.attachSecret(result, next, next === existing);
  }

  async patchResource(resourceType: string, id: string, operations: unknown, options: WriteOptions = {}): Promise<WriteResult> {
    assertTypeAccess(this.who, resourceType, 'update');
    assertScope(this.who, resourceType, 'u');
    if (
      resourceType === 'ClientApplication' &&
      Array.isArray(operations) &&
      operations.some((op) => isRecord(op) && typeof op.path === 'string' && /^\/(secret|retiringSecret)(\/|$)/.test(op.path))
    ) {
      throw errors.invalid('A ClientApplication secret cannot be patched: send it with PUT', 'ClientApplication.secret');
    }
    await this.assertExistingWithinCriteria(resourceType, id, 'u');
    await this.assertNotBotCode(resourceType, id);
    const result = await this.store.patchResource(resourceType, id, operations, options);
    if (resourceType === 'ProjectMembership') this.checkMembership(resourceType, result.resource);
    return result;
  }

  async deleteResource(resourceType: string, id: string, options: WriteOptions = {}): Promise<void> {
    assertTypeAccess(this.who, resourceType, 'delete');
    assertScope(this.who, resourceType, 'd');
    await this.assertExistingWithinCriteria(resourceType, id, 'd');
    await this.assertNotBotCode(resourceType, id);
    if (resourceType === 'User' && !this.who.superAdmin) await this.assertNotServerWideUser(id);
    return this.store.deleteResource(resourceType, id, options);
  }

  /** A server-wide User may be a member of other projects: only a super admin deletes one. */
  private async assertNotServerWideUser(id: string): Promise<void> {
    let user: Resource;
    try {
      user = parseStored(await this.store.readVersion('User', id, 'primary'));
    } catch {
      return; // missing or deleted: the delete answers as it does for any type
    }
    if (isServerWide(user)) throw serverWideUserRefusal('delete');
  }

  /** Admins only: an expunge cannot be undone, so a policy's write access is not enough. */
  async expungeResource(resourceType: string, id: string): Promise<void> {
    if (!this.who.superAdmin && !this.who.projectAdmin) throw errors.forbidden('Only a project admin or a super admin can expunge a resource');
    assertTypeAccess(this.who, resourceType, 'delete');
    return this.store.expungeResource(resourceType, id);
  }

  createBinary(contentType: string, data: Uint8Array, extra: Partial<Resource> = {}, id?: string): Promise<WriteResult> {
    assertTypeAccess(this.who, 'Binary', 'create');
    assertScope(this.who, 'Binary', 'c');
    return this.creator.createBinary(contentType, data, extra, id);
  }

  async updateBinary(id: string, contentType: string, data: Uint8Array, options: WriteOptions = {}, extra: Partial<Resource> = {}): Promise<WriteResult> {
    assertTypeAccess(this.who, 'Binary', 'update');
    assertScope(this.who, 'Binary', 'u');
    await this.assertExistingWithinCriteria('Binary', id, 'u');
    await this.assertNotBotCode('Binary', id);
    return this.store.updateBinary(id, contentType, data, options, extra);
  }

  /** The version came from a guarded read or search, which applied the criteria: the type is checked again, not the criteria. */
  async readBinaryData(version: StoredVersion): Promise<Uint8Array | undefined> {
    assertTypeAccess(this.who, 'Binary', 'read');
    assertScope(this.who, 'Binary', 'r');
    return this.store.readBinaryData(version);
  }

  async readBinaryStream(version: StoredVersion): Promise<BinaryStream | undefined> {
    assertTypeAccess(this.who, 'Binary', 'read');
    assertScope(this.who, 'Binary', 'r');
    return this.store.readBinaryStream(version);
  }

  /** What the caller's criteria searches run with: the same as a request's searches (before a write: on the primary). */
  private searchContext(identity: Identity, from: 'reader' | 'primary' = 'reader'): SearchContext {
    const { config, searchCache } = this.services;
    const reads = from === 'primary' ? undefined : this.reads;
    return { database: this.reads.primary, reads, transaction: this.joined, identity, config, searchCache };
  }

  /** Where statements that decide access go: the request's transaction, else the primary (never behind a write the read shows). */
  private get primary(): SqlExecutor {
    return this.joined ?? this.reads.primary;
  }

  /**
   * A Binary holding a Bot's code is invisible (404) to all but project admins and super admins,
   * to read and to write alike (a write would change the code the Bot runs): src/storage/bot-code.ts.
   */
  private assertNotBotCode(resourceType: string, id: string): Promise<void> | undefined {
    if (resourceType !== 'Binary' || seesBotCode(this.who)) return undefined;
    return isBotCode(this.primary, this.who.projectId, id).then((botCode) => {
      if (botCode) throw errors.notFound(`Binary/${id} not found`);
    });
  }

  /**
   * A ClientApplication's secret is sealed in a table the resource store's transactions do not
   * reach, so a transaction could not roll it back (and on the embedded database would wait on itself).
   */
  private assertJoinable(resourceType: string): void {
    if (this.joined && resourceType === 'ClientApplication') {
      throw errors.invalid('ClientApplication resources cannot be read or written in a transaction: their secrets are kept outside it; use a batch');
    }
  }

  /**
   * A resource outside the caller's AccessPolicy criteria for its type is invisible (404), as a
   * resource of another project is. The check is the search engine's, so it cannot disagree with it.
   */
  private assertWithinCriteria(resourceType: string, id: string, permission: Permission, from: 'reader' | 'primary' = 'reader'): Promise<void> | undefined {
    return this.versionWithinCriteria(resourceType, id, permission, from)?.then(() => undefined);
  }

  /**
   * The versionId of the resource's current version as the criteria search saw it, when the
   * caller's criteria narrow the type (else undefined, with nothing to wait for); not found when
   * outside them.
   */
  private versionWithinCriteria(resourceType: string, id: string, permission: Permission, from: 'reader' | 'primary' = 'reader'): Promise<string> | undefined {
    const who = this.as(permission);
    if (!policyCriteria(who, resourceType)) return undefined;
    return idsWithinCriteria(this.searchContext(who, from), resourceType, [id]).then((within) => {
      const versionId = within.get(id);
      if (versionId === undefined) throw errors.notFound(`${resourceType}/${id} not found`);
      return versionId;
    });
  }

  /**
   * The version the criteria were judged on. A write committed between reading the current version
   * and searching makes them differ: answering the version read would show one the criteria may
   * exclude. Versions never change once written, so the judged one is read by its id, from the
   * primary (a replica may not have replayed it yet).
   */
  private async judgedVersion(read: StoredVersion, judgedVersionId: string): Promise<StoredVersion> {
    if (read.versionId === judgedVersionId) return read;
    return this.store.readHistoryVersion(read.resourceType, read.id, judgedVersionId, 'primary');
  }

  /** The versions outside the AccessPolicy criteria of their type (one search per type that has criteria). */
  private async outsideCriteria<K extends ResourceKey>(versions: readonly K[], who: Identity): Promise<K[]> {
    const verdicts = await criteriaVerdicts(this.searchContext(who), versions);
    return versions.filter((version) => verdicts.has(version) && verdicts.get(version) === undefined);
  }

  /** Of current versions read, those within the reader's criteria, each as its criteria search judged it (see judgedVersion). */
  private async asJudgedWithinCriteria(versions: readonly StoredVersion[], who: Identity): Promise<StoredVersion[]> {
    const verdicts = await criteriaVerdicts(this.searchContext(who), versions);
    const judged: StoredVersion[] = [];
    for (const version of versions) {
      if (!verdicts.has(version)) judged.push(version);
      else {
        const versionId = verdicts.get(version);
        if (versionId !== undefined) judged.push(await this.judgedVersion(version, versionId));
      }
    }
    return judged;
  }

  /** A written resource must meet the criteria of the caller's policy for its type, or the write is undone. */
  private async verifyWrite(tx: SqlExecutor, resource: Resource, writer: Identity): Promise<void> {
    const result = await search(searchServicesFor(this.searchContext(writer), { transaction: tx }), resource.resourceType, [
      ['_id', resource.id!],
      ['_count', '1'],
    ]);
    if (result.matches.length === 0) {
      throw errors.forbidden(`This ${resource.resourceType} does not meet your access policy's criteria or SMART scopes for ${resource.resourceType}`);
    }
  }

  /** Before changing a resource: an existing one must be within the criteria (a new id is not checked); decided on the primary. */
  private async assertExistingWithinCriteria(resourceType: string, id: string, permission: Permission): Promise<void> {
    if (!policyCriteria(this.as(permission), resourceType)) return;
    try {
      await this.store.readVersion(resourceType, id, 'primary');
    } catch {
      return;
    }
    await this.assertWithinCriteria(resourceType, id, permission, 'primary');
  }

  /** A membership names the project it is stored in: it can never grant access to another one. */
  private checkMembership(resourceType: string, input: unknown): void {
    if (resourceType !== 'ProjectMembership' || this.who.superAdmin || !isRecord(input)) return;
    const project = (input.project as { reference?: string } | undefined)?.reference;
    if (project !== `Project/${this.who.projectId}`) {
      throw errors.forbidden(`A ProjectMembership created here must reference Project/${this.who.projectId}`);
    }
  }

  /** After a ClientApplication write: its secret stored when new, and the answer as a read shows it (the writer is an admin). */
  private async attachSecret(result: WriteResult, secret: string, unchanged = false): Promise<WriteResult> {
    const projectId = result.resource.meta!.project!;
    if (!unchanged) await storeClientSecret(this.services.auth, result.resource.id!, projectId, secret);
    const resource = { ...result.resource, secret, ...(await readClientSecrets(this.services.auth, [result.resource.id!])).get(result.resource.id!) };
    return { ...result, resource, text: JSON.stringify(resource) };
  }
}

/** The identity as the searches that check each SMART permission run it (scope-access.ts, scopeUse). */
/** What the store takes of the services, named one by one: a copy of every service cost each request more. */
function storageOf(services: Services, db: StorageServices['db'], reader?: StorageServices['reader']): StorageServices {
  const { config, binaryStorage, resourceCache, bus, searchCache, createBatches, changeLog } = services;
  return { config, db, reader, binaryStorage, resourceCache, bus, searchCache, createBatches, changeLog };
}

function scopedIdentities(who: Identity): (permission: Permission) => Identity {
  if (!who.scopes) return () => who;
  const made = new Map<Permission, Identity>();
  return (permission) => {
    let identity = made.get(permission);
    if (!identity) made.set(permission, (identity = { ...who, scopeUse: permission }));
    return identity;
  };
}
