import { randomUUID } from 'node:crypto';
import type { AuthService } from '../auth/service.js';
import { readAny } from '../auth/accounts.js';
import { hashSecret, randomSecret, seal } from '../auth/secrets.js';
import type { Identity } from '../identity/identity.js';
import { errors } from '../fhir/outcome.js';
import type { Project, Reference } from '../fhir/resources.js';
import { type Resource, isRecord } from '../fhir/types.js';
import { binaryKey, copyBinary } from '../storage/binary-storage.js';
import { writeHookOf } from '../storage/write-hooks.js';
import { loadProjectParameters, type ProjectParameters } from '../indexing/parameters.js';
import { insertFirstVersion } from '../storage/sql.js';
import { copyIndexedConcepts } from '../terminology/indexing.js';
import { validateResource } from '../validation/validator.js';
import { botMembershipOf } from '../bots/membership.js';
import { credentialsOf, withoutCredentials, type Subscription } from '../events/subscription.js';
import type { Operation } from '../operations/registry.js';
import { referenceRewriter } from './clone-references.js';

/** SPEC 4.7 rule 1: resources scanned per type. */
export const CLONE_LIMIT_PER_TYPE = 1000;
/**
 * SPEC 4.7 rule 6: login history, audit logs and jobs stay behind. Users too: they are server-wide
 * accounts (one per email, src/auth/uniqueness.ts), not project data (rule 5 does not list them);
 * the cloned memberships keep referencing the same Users, so the same people are members of both.
 */
const NOT_CLONED = new Set(['Project', 'Login', 'AuditEvent', 'AsyncJob', 'User']);

export interface CloneRequest {
  name?: string;
  resourceTypes?: string[];
  includeIds?: string[];
  excludeIds?: string[];
}

interface Row {
  resourceType: string;
  id: string;
  versionId: string;
  content: string;
}

/**
 * `Project/{id}/$clone` (SPEC 4.7), for super admins only: every resource type of the project is
 * scanned (at most 1000 resources per type), filtered by `resourceTypes`, `includeIds` and
 * `excludeIds` (an id in both is excluded), and copied with new ids; every reference to a cloned
 * resource (`Type/id`, absolute URLs of this server, Binary urls in attachments, `meta.author` and
 * `meta.accounts`, the values of search criteria: clone-references.ts) is rewritten.
 * Binary bytes are copied; ClientApplications get new secrets; Bot secrets, the Project's secret
 * and systemSecret and Subscriptions' credentials are dropped (subscriptionCopy); a Bot
 * whose membership is not cloned gets a new one in the clone's transaction; Users are not copied
 * and memberships lose their externalId (both name one account server-wide). Each copy runs its
 * type's write hook, as any write does, so cloned CodeSystems are indexed for the terminology
 * operations (with the concepts $import added to the source). The whole clone is one transaction:
 * a failure leaves nothing behind. The caller owns the new Project.
 */
export async function cloneProject(auth: AuthService, identity: Identity, sourceId: string, request: CloneRequest): Promise<Project> {
  if (!identity.superAdmin) throw errors.forbidden('Only a super admin can clone a project');
  const source = await readAny(auth.db, 'Project', sourceId);
  if (!source) throw errors.notFound(`Project/${sourceId} not found`);
  const name = request.name?.trim() || undefined;
  const types = new Set(request.resourceTypes ?? []);
  const include = new Set(request.includeIds ?? []);
  const exclude = new Set(request.excludeIds ?? []);
  const rows = await auth.db.query<Row>(
    `SELECT "resourceType", id, "versionId"::text AS "versionId", content::text AS content FROM (
       SELECT *, row_number() OVER (PARTITION BY "resourceType" ORDER BY "lastUpdated", id) AS n
       FROM resource WHERE "projectId" = $1 AND NOT deleted) AS r
     WHERE n <= ${CLONE_LIMIT_PER_TYPE} ORDER BY "resourceType", id`,
    [sourceId],
  );
  const selected = rows.filter(
    (row) =>
      !NOT_CLONED.has(row.resourceType) &&
      (types.size === 0 || types.has(row.resourceType)) &&
      (include.size === 0 || include.has(row.id)) &&
      !exclude.has(row.id),
  );
  const newProjectId = randomUUID();
  const ids = new Map<string, string>([[`Project/${sourceId}`, newProjectId]]);
  for (const row of selected) ids.set(`${row.resourceType}/${row.id}`, randomUUID());
  const rewrite = referenceRewriter(ids, auth.config.fhirBaseUrl);
  const now = new Date().toISOString();
  const owner: Reference | undefined = identity.subject?.startsWith('User/') ? { reference: identity.subject } : source.owner;
  // The clone is never a super admin project, whatever the source is; secrets are reconfigured (SPEC 4.7 rule 6).
  const { superAdmin: _superAdmin, secret: _secret, systemSecret: _systemSecret, ...copied } = rewrite(source);
  const project: Project = { ...copied, id: newProjectId, ...(name ? { name } : {}), ...(owner ? { owner } : {}) };
  const secrets: { clientId: string; secret: string }[] = [];
  const resources: { resource: Resource; sourceResourceId?: string; binaryFrom?: string }[] = [{ resource: project }];
  for (const row of selected) {
    const resource = rewrite(JSON.parse(row.content) as Resource);
    resource.id = ids.get(`${row.resourceType}/${row.id}`)!;
    if (row.resourceType === 'ProjectMembership') {
      if (name && isRecord(resource.project)) resource.project = { ...resource.project, display: name };
      // externalId is unique across all memberships (SPEC 2.5, 5 rule 7): a copy would make the
      // source's external sign-in ambiguous (401). The clone's memberships get theirs by PUT.
      delete resource.externalId;
    }
    if (row.resourceType === 'ClientApplication') {
      if (name && typeof resource.name === 'string' && / Default Client$/.test(resource.name)) resource.name = `${name} Default Client`;
      secrets.push({ clientId: resource.id, secret: randomSecret() });
    }
    if (row.resourceType === 'Bot') {
      for (const key of ['secret', 'secrets', 'runAsUser']) delete resource[key];
    }
    resources.push({ resource: row.resourceType === 'Subscription' ? subscriptionCopy(resource) : resource, sourceResourceId: row.id, binaryFrom: row.resourceType === 'Binary' ? binaryKey(sourceId, row.id, row.versionId) : undefined });
  }
  resources.push(...botMemberships(resources.map((item) => item.resource), newProjectId));
  const hashed = await Promise.all(secrets.map(async (s) => ({ ...s, hash: await hashSecret(s.secret) })));
  // The project's own SearchParameters go first: every other resource is indexed by them too.
  resources.sort((a, b) => Number(b.resource.resourceType === 'SearchParameter') - Number(a.resource.resourceType === 'SearchParameter'));
  await auth.db.transaction(async (tx) => {
    let parameters: ProjectParameters | undefined;
    for (const { resource, sourceResourceId, binaryFrom } of resources) {
      const versionId = randomUUID();
      const stamped = { ...resource, meta: { ...(resource.meta ?? {}), versionId, lastUpdated: now, project: newProjectId } };
      validateResource(stamped, { expectedType: stamped.resourceType });
      if (stamped.resourceType !== 'SearchParameter') parameters ??= await loadProjectParameters(tx, newProjectId);
      await insertFirstVersion(tx, stamped, parameters);
      // As on every write: the type's write hook (CodeSystem: concept indexing) in the transaction.
      await writeHookOf(stamped.resourceType)?.(tx, { resourceType: stamped.resourceType, id: stamped.id!, projectId: newProjectId, resource: stamped });
      // Concepts added by CodeSystem/$import live only in the source's index: copy them too.
      if (sourceResourceId && stamped.resourceType === 'CodeSystem') await copyIndexedConcepts(tx, sourceResourceId, stamped.id!);
      // Bytes and credentials are copied in the clone's transaction, so on its adapter (not the
      // Prisma client of binary-storage.ts and accounts.ts, which would run outside it).
      if (binaryFrom) {
        await copyBinary(tx, binaryFrom, binaryKey(newProjectId, resource.id!, versionId), newProjectId);
      }
    }
    for (const { clientId, secret, hash } of hashed) {
      await tx.execute('INSERT INTO auth_credential (id, "projectId", hash, sealed) VALUES ($1, $2, $3, $4)', [
        `ClientApplication/${clientId}`,
        newProjectId,
        hash,
        seal(auth.keys.sealingKey, secret),
      ]);
    }
  }, 'bulk');
  auth.searchCache?.writtenAnywhere(newProjectId);
  // New ids, so nothing was cached for them; forgotten all the same, as after any credential write.
  for (const { clientId } of hashed) auth.clientCredentials.forget(`ClientApplication/${clientId}`);
  return (await readAny(auth.db, 'Project', newProjectId))!;
}

/** Why a cloned Subscription is off: what an admin must do to turn it back on. */
function clonedWithout(credentials: string[]): string {
  return `Project/$clone did not copy ${credentials.join(', ')}: set them, then set status to active`;
}

/**
 * A Subscription as the clone holds it: without the credentials its endpoint is called with
 * (SPEC 4.7: secrets are not cloned), and turned off when it had any. An active copy would call the
 * source's endpoint without the credentials it expects: refused at every attempt, or worse taken
 * by a receiver that does not insist on them, unable to tell the copy's notifications from the
 * source's. One without credentials is copied as it is.
 */
function subscriptionCopy(resource: Resource): Resource {
  const copy = withoutCredentials(resource as Subscription);
  if (!copy) return resource;
  if (copy.status !== 'active' && copy.status !== 'requested') return copy;
  return { ...copy, status: 'off', error: clonedWithout(credentialsOf(resource as Subscription)) } as Resource;
}

/**
 * A membership for each cloned Bot that none of the cloned memberships is for (its own was left
 * out by the clone's filters), so that every Bot of the clone can run as itself from the start.
 */
function botMemberships(cloned: readonly Resource[], projectId: string): { resource: Resource }[] {
  const withMembership = new Set<unknown>();
  for (const resource of cloned) {
    if (resource.resourceType === 'ProjectMembership' && isRecord(resource.profile)) withMembership.add(resource.profile.reference);
  }
  return cloned
    .filter((resource) => resource.resourceType === 'Bot' && !withMembership.has(`Bot/${resource.id}`))
    .map((bot) => ({ resource: { ...botMembershipOf(projectId, bot.id!), id: randomUUID() } as Resource }));
}

export const projectCloneOperation: Operation<CloneRequest> = {
  definition: {
    resourceType: 'OperationDefinition',
    id: 'Project-clone',
    url: 'https://flint.dev/fhir/OperationDefinition/Project-clone',
    name: 'ProjectClone',
    status: 'active',
    kind: 'operation',
    code: 'clone',
    description: 'Copies a Project and its resources with new ids (super admins only)',
    resource: ['Project'],
    system: false,
    type: false,
    instance: true,
    affectsState: true,
    parameter: [
      { use: 'in', name: 'name', min: 0, max: '1', type: 'string', documentation: 'Name of the new Project (also renames membership displays and default clients)' },
      { use: 'in', name: 'resourceTypes', min: 0, max: '*', type: 'string', documentation: 'Resource types to clone; none means all' },
      { use: 'in', name: 'includeIds', min: 0, max: '*', type: 'string', documentation: 'Only these resource ids; none means all' },
      { use: 'in', name: 'excludeIds', min: 0, max: '*', type: 'string', documentation: 'Resource ids to leave out (wins over includeIds)' },
      { use: 'out', name: 'return', min: 1, max: '1', type: 'Project', documentation: 'The new Project' },
    ],
  },
  successStatus: 201,
  // SPEC 4.7: the body is a plain JSON object (a Parameters body works too).
  acceptsPlainJsonBody: true,
  // With `Prefer: respond-async`, a job (src/operations/jobs) whose output's `return` is the new
  // Project; the clone is still one transaction, so a failed one leaves nothing behind.
  respondsAsync: true,
  access: 'super-admin',
  async check(_input, { ctx, id }) {
    if (!(await readAny(ctx.auth.db, 'Project', id!))) throw errors.notFound(`Project/${id} not found`);
  },
  async handler(input, { ctx, id }) {
    return { return: await cloneProject(ctx.auth, ctx.identity, id!, input) };
  },
};
