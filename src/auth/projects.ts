import { createHash, randomUUID } from 'node:crypto';
import { asResourceOf, type Project, type ProjectMembership, type ResourceType, type ResourceTypeMap } from '../fhir/resources.js';
import { readCredential, writeCredential } from './accounts.js';
import { hashSecret, randomSecret, seal, unseal } from './secrets.js';
import type { AuthService } from './service.js';

/** A UUID-shaped id derived from a name: the same on every server, so bootstrap is idempotent. */
export function stableId(name: string): string {
  const hex = createHash('sha256').update(`flint:${name}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** Removes keys whose value is undefined (the validator rejects them; JSON would drop them). */
export function compact<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

/** Stores a client secret: scrypt hash to verify it, sealed copy so project admins can read it. */
export async function storeClientSecret(auth: AuthService, clientId: string, projectId: string, secret: string): Promise<void> {
  const hash = await hashSecret(secret);
  await writeCredential(auth.db, { id: `ClientApplication/${clientId}`, projectId, hash, sealed: seal(auth.keys.sealingKey, secret) });
  auth.secrets.remember(`ClientApplication/${clientId}`, secret, hash);
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

/**
 * A new Project (`strictMode: true`), its owner's admin membership with a Practitioner profile,
 * and the default ClientApplication with a secret and its own admin membership (DESIGN 5).
 */
export async function createProject(auth: AuthService, request: NewProject): Promise<CreatedProject> {
  const projectId = request.id ?? randomUUID();
  const project = await put(auth, projectId, {
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
    const practitioner = await put(auth, projectId, {
      resourceType: 'Practitioner',
      id: randomUUID(),
      name: [{ given: [first], family: last }],
    });
    ownerMembership = await put(auth, projectId, {
      resourceType: 'ProjectMembership',
      id: randomUUID(),
      project: { reference: `Project/${projectId}`, display: request.name },
      user: { reference: `User/${request.owner.userId}`, display: `${first} ${last}` },
      profile: { reference: `Practitioner/${practitioner.id}`, display: `${first} ${last}` },
      userName: `${first} ${last}`,
      admin: true,
    });
  }
  const client = await createClientApplication(auth, projectId, `${request.name} Default Client`, { admin: true });
  return { project, ownerMembership, client };
}

/** A ClientApplication with a fresh secret and a membership in its project. */
export async function createClientApplication(
  auth: AuthService,
  projectId: string,
  name: string,
  options: { admin?: boolean; id?: string; secret?: string } = {},
): Promise<CreatedProject['client']> {
  const clientId = options.id ?? randomUUID();
  const secret = options.secret ?? randomSecret();
  await storeClientSecret(auth, clientId, projectId, secret);
  await put(auth, projectId, { resourceType: 'ClientApplication', id: clientId, name });
  const membership = await put(auth, projectId, {
    resourceType: 'ProjectMembership',
    id: stableId(`client-membership:${clientId}`),
    project: { reference: `Project/${projectId}` },
    user: { reference: `ClientApplication/${clientId}`, display: name },
    profile: { reference: `ClientApplication/${clientId}`, display: name },
    userName: name,
    admin: options.admin === true,
  });
  return { id: clientId, secret, membership };
}
