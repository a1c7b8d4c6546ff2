import { randomUUID } from 'node:crypto';
import type { Config } from '../config.js';
import type { StorageServices } from '../storage/repository.js';
import type { Identity } from '../identity/identity.js';
import type { Database, SqlExecutor } from '../db/database.js';
import { JoinedTransaction } from '../db/joined-transaction.js';
import type { Repository } from '../storage/repository.js';
import type { Login, ProjectMembership } from '../fhir/resources.js';
import { asResourceOf } from '../fhir/typed-resources.js';
import { CredentialCache, parseReference, readAny, systemRepository } from './accounts.js';
import { ExternalAuth } from './external.js';
import { loadServerKeys, type ServerKeys } from './keys.js';
import { randomSecret, safeEqual, sha256Base64Url, VerifiedSecrets } from './secrets.js';
import { LoginThrottle } from './throttle.js';
import { compact } from '../fhir/types.js';
import { writeHookOf } from '../storage/write-hooks.js';
import { type ResourceKey, type StoredVersion } from '../storage/types.js';
import { validateResource } from '../validation/validator.js';
import { LoginWriter } from './login-writer.js';
import { checkAuthFields } from './request-fields.js';
import { narrowScope } from './scope-grant.js';
import { launchContextOf, launchOf } from './launch-context.js';
import { ClientAssertions } from './client-assertion.js';
import { ALL_KEYS, changedResourceOf, resourceChangedTopic, type InvalidationBus } from '../cache/invalidation.js';
import type { SharedStore } from '../cache/shared-store.js';
import { ACCESS_TOKEN_SECONDS, IdentityCache, REFRESH_TOKEN_SECONDS, TokenError, TokenSigner, type TokenResponse } from './tokens.js';
import type { SearchCache } from '../cache/search-cache.js';
import { loginAge, newLogin, readLoginChain, subjectOf, type LoginRequest } from './login-record.js';
import { identityFromMembership } from './membership-identity.js';

/** The notice of a changed client secret; the key is the client id. */
const CLIENT_SECRET_CHANGED = 'client-secret-changed';

/** The resources a cached Identity is made of, and which identities a change of one affects. */
const IDENTITY_SOURCES: Record<string, (identity: Identity, id: string) => boolean> = {
  Login: (identity, id) => identity.loginId === id,
  ProjectMembership: (identity, id) => identity.membershipId === id,
  AccessPolicy: (identity, id) => identity.accessPolicy?.policyId === id,
  Project: (identity, id) => identity.projectId === id,
  ClientApplication: (identity, id) => identity.clientId === id,
  User: (identity, id) => identity.subject === `User/${id}`,
};

/** The store accounts live in: always the database itself, never a joined transaction. */
type AuthStorage = StorageServices & { readonly db: Database };

/**
 * Authentication state of one server: its keys (loaded once, kept in memory), the token signer,
 * and the caches that keep token verification and repeated client logins cheap. Everything else
 * (Logins, memberships, credentials) lives in the database, so servers share it.
 */
export class AuthService {
  readonly identities = new IdentityCache();
  readonly secrets = new VerifiedSecrets();
  /** Client secret hashes in memory, on the embedded database only (see CredentialCache). */
  readonly clientCredentials: CredentialCache;
  readonly signer: TokenSigner;
  readonly external: ExternalAuth;
  readonly throttle = new LoginThrottle();
  /** Client authentication by signed JWTs (SMART Backend Services), with their clients' key sets. */
  readonly assertions: ClientAssertions;
  /** New Logins, grouped into one statement per turn under load (see LoginWriter). */
  private readonly logins: LoginWriter;
  /** The servers' notice channel, once shareThrough was called. */
  private bus: InvalidationBus | undefined;

  private constructor(
    private readonly storage: AuthStorage,
    readonly config: Config,
    readonly keys: ServerKeys,
  ) {
    this.signer = new TokenSigner(config, keys);
    this.external = new ExternalAuth(config);
    this.assertions = new ClientAssertions(`${config.baseUrl}oauth2/token`);
    this.clientCredentials = new CredentialCache(storage.db.kind === 'pglite');
    this.logins = new LoginWriter(storage.db, storage.searchCache);
  }

  static async start(storage: AuthStorage, config: Config): Promise<AuthService> {
    return new AuthService(storage, config, await loadServerKeys(storage.db));
  }

  /**
   * Keeps this server's caches in step with the others: a committed change of a Login (logout),
   * membership, access policy, project, client or user evicts the cached identities built from it
   * on every server, and login failures count on every server (LoginThrottle). With a shared
   * store (Redis), external token validations are shared too (ExternalAuth).
   */
  shareThrough(bus: InvalidationBus, store?: SharedStore): void {
    if (store) this.external.shareThrough(store);
    for (const [resourceType, affects] of Object.entries(IDENTITY_SOURCES)) {
      bus.subscribe(resourceChangedTopic(resourceType), (key) => {
        const changed = changedResourceOf(key);
        if (changed) this.identities.evict((identity) => affects(identity, changed.id));
        else this.identities.clear();
      });
    }
    // HTTP Basic identities rest on a secret, which a rotation changes without writing the client.
    bus.subscribe(CLIENT_SECRET_CHANGED, (clientId) => this.forgetBasicIdentities(clientId));
    this.throttle.shareThrough(bus);
    this.bus = bus;
  }

  /**
   * After a client's secret changed (rotated, retired, set): every server drops the identities it
   * verified with HTTP Basic for that client, so a secret that stopped working stops at once.
   */
  async clientSecretChanged(clientId: string): Promise<void> {
    if (this.bus) await this.bus.publish(CLIENT_SECRET_CHANGED, clientId);
    else this.forgetBasicIdentities(clientId);
  }

  private forgetBasicIdentities(clientId: string): void {
    // A Basic identity has no Login; ALL_KEYS (notices lost) drops every one.
    this.identities.evict((identity) => identity.loginId === undefined && (clientId === ALL_KEYS || identity.clientId === clientId));
  }

  get db(): Database {
    return this.storage.db;
  }

  /** The resource store's services, for administration that writes across a project (Project/$expunge). */
  get storageServices(): AuthStorage {
    return this.storage;
  }

  /** Exact search counts, for writers outside the Repository to void after their commits. */
  get searchCache(): SearchCache | undefined {
    return this.storage.searchCache;
  }

  /**
   * Current versions of resources in any project, through the resource cache: no statement for
   * cached ones (the embedded database), one for the rest. Deleted and missing ones are absent.
   */
  readCurrent(keys: readonly ResourceKey[]): Promise<Map<string, StoredVersion>> {
    // A system repository reads across projects; the project it is made for only matters to writes.
    return systemRepository(this.storage, '').readVersions(keys);
  }

  repo(projectId: string) {
    return systemRepository(this.storage, projectId);
  }

  /**
   * System repositories whose statements go to `db`: a request's database inside its open
   * transaction (a transaction Bundle), so that what they write commits or rolls back with it.
   */
  joinedRepositories(db: Database): (projectId: string) => Repository {
    return (projectId) => systemRepository({ ...this.storage, db }, projectId);
  }

  /**
   * Runs `work` in one transaction whose system repositories (one per project) write as `repo`
   * does (validated, indexed, write hooks run); caches and other servers hear of the writes after
   * the commit, and nothing of them after a rollback.
   */
  async inTransaction<T>(work: (repo: (projectId: string) => Repository, tx: SqlExecutor) => Promise<T>): Promise<T> {
    let joined: JoinedTransaction | undefined;
    const result = await this.db.transaction((tx) => {
      const open = new JoinedTransaction(tx, this.db.kind);
      joined = open;
      return work((projectId) => systemRepository({ ...this.storage, db: open }, projectId), tx);
    });
    joined?.committed();
    return result;
  }

  /** Who a verified access token of ours speaks for; 401 when its Login was revoked. */
  async identityOf(token: string): Promise<Identity> {
    const cached = this.identities.get(token);
    if (cached) return cached;
    const claims = await this.signer.verify(token);
    const { login, membership, project, policy } = await readLoginChain(this.db, claims.login_id);
    if (!login || login.revoked) throw new TokenError('The login behind this token has ended: sign in again');
    const subject = subjectOf(login);
    if (!membership || membership.active === false) throw new TokenError('The membership behind this token no longer exists');
    const identity = identityFromMembership(membership, project, policy, {
      subject,
      clientId: claims.client_id,
      loginId: login.id,
      scope: claims.scope,
      launch: launchOf(claims),
    });
    this.identities.set(token, identity, claims.exp * 1000);
    return identity;
  }

  async readMembership(reference: string | undefined): Promise<ProjectMembership | undefined> {
    const ref = parseReference(reference);
    if (!ref || ref[0] !== 'ProjectMembership') return undefined;
    const membership = await readAny(this.db, 'ProjectMembership', ref[1]);
    return membership && membership.active !== false ? membership : undefined;
  }

  /** The identity a membership confers: its project, admin flags and access policy. */
  async identityFor(membership: ProjectMembership, extra: Partial<Identity> = {}): Promise<Identity> {
    const project = await readAny(this.db, 'Project', membership.meta!.project!);
    const policyRef = parseReference(membership.accessPolicy?.reference);
    const policy = policyRef ? await readAny(this.db, 'AccessPolicy', policyRef[1]) : undefined;
    return identityFromMembership(membership, project, policy, extra);
  }

  /** Records a Login (a resource in the membership's project). */
  async createLogin(request: LoginRequest, extra: Partial<Login> = {}): Promise<Login> {
    // Checked by the endpoints already; here too, as nothing that fails the statement may join other requests' Logins.
    const { scope, clientId, codeChallenge } = request;
    checkAuthFields({ scope, client_id: clientId, code_challenge: codeChallenge }, this.config.authMaxFieldLength);
    const projectId = request.membership.meta!.project!;
    const login = newLogin(request, extra);
    // Through the repository only if something must run in a Login's write transaction (a hook).
    if (writeHookOf('Login')) {
      return asResourceOf((await this.repo(projectId).createResource('Login', compact(login))).resource, 'Login');
    }
    const input: unknown = compact(login);
    validateResource(input, { expectedType: 'Login' });
    // Stamped as the repository stamps a new resource (same fields, same order).
    const { resourceType, ...rest } = asResourceOf(input, 'Login');
    const meta = { versionId: randomUUID(), lastUpdated: new Date().toISOString(), project: projectId };
    const stamped: Login = { resourceType, id: randomUUID(), meta, ...rest };
    await this.logins.write(stamped);
    return stamped;
  }

  /**
   * Issues the tokens of a Login: an access token (1 hour) and, when `withRefresh`, a refresh
   * token `<loginId>.<secret>` (two weeks) whose secret is stored hashed and rotates on every use.
   */
  async issueTokens(login: Login, withRefresh: boolean, knownMembership?: ProjectMembership, narrowed?: string): Promise<TokenResponse> {
    const membership = knownMembership ?? (await this.readMembership(login.membership?.reference));
    if (!membership) throw new TokenError('The membership of this login no longer exists');
    // The project a membership is stored in is the one it grants (its `project` reference could lie).
    const projectId = membership.meta!.project!;
    const subject = subjectOf(login);
    const clientId = parseReference(login.client?.reference)?.[1];
    const scope = narrowed ?? login.scope ?? 'openid';
    const launch = await launchContextOf(this.db, login, membership);
    const accessToken = await this.signer.sign({
      sub: parseReference(subject)?.[1] ?? subject,
      login_id: login.id!,
      profile: membership.profile?.reference ?? subject,
      project: projectId,
      scope,
      ...(clientId ? { client_id: clientId } : {}),
      ...launch,
    });
    const response: TokenResponse = {
      token_type: 'Bearer',
      access_token: accessToken,
      expires_in: ACCESS_TOKEN_SECONDS,
      scope,
      project: { reference: `Project/${projectId}` },
      profile: { reference: membership.profile?.reference ?? subject },
      ...launch,
    };
    if (withRefresh) {
      const secret = randomSecret();
      await this.repo(projectId).updateResource(
        'Login',
        login.id!,
        compact({ ...login, granted: true, refreshSecret: sha256Base64Url(secret), code: undefined }),
        { ifMatch: login.meta?.versionId },
      );
      response.refresh_token = `${login.id}.${secret}`;
    }
    return response;
  }

  /**
   * Rotates a refresh token: the presented secret must be the current one and the Login not
   * revoked or expired; a reused (old) secret revokes the whole Login, as a stolen token would.
   */
  async refresh(refreshToken: string, scope?: string): Promise<TokenResponse> {
    const match = /^([A-Za-z0-9-]{36})\.([0-9a-f]{64})$/.exec(refreshToken);
    if (!match) throw new TokenError('The refresh token is malformed');
    const login = await readAny(this.db, 'Login', match[1]);
    if (!login || login.revoked || !login.refreshSecret) throw new TokenError('The refresh token has been revoked');
    if (loginAge(login) > REFRESH_TOKEN_SECONDS * 1000) throw new TokenError('The refresh token has expired');
    if (!safeEqual(sha256Base64Url(match[2]), login.refreshSecret)) {
      await this.revoke(login);
      throw new TokenError('The refresh token was already used: the login is revoked, sign in again');
    }
    // The access token may carry less than the login was granted; the refresh token keeps it all.
    const narrowed = scope === undefined ? undefined : narrowScope(login.scope ?? 'openid', scope);
    try {
      return await this.issueTokens(login, true, undefined, narrowed);
    } catch (error) {
      // A concurrent use of the same refresh token won the race (If-Match failed).
      if ((error as { status?: number }).status === 412) throw new TokenError('The refresh token was already used');
      throw error;
    }
  }

  async revoke(login: Login): Promise<void> {
    const projectId = parseReference(login.project?.reference)?.[1] ?? login.meta!.project!;
    await this.repo(projectId).updateResource('Login', login.id!, compact({ ...login, revoked: true, refreshSecret: undefined, code: undefined }));
    this.identities.evictLogin(login.id!);
  }
}
