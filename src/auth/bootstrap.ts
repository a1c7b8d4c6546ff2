import type { Logger } from 'pino';
import { readCredential } from './accounts.js';
import { put, stableId, storeClientSecret, storePassword } from './account-writes.js';
import { hashSecret, randomSecret, verifySecret } from './secrets.js';
import { writeCredential } from './accounts.js';
import type { AuthService } from './service.js';

export const SUPER_ADMIN_PROJECT_ID = stableId('super-admin-project');
const SUPER_ADMIN_USER_ID = stableId('super-admin-user');
const SUPER_ADMIN_PRACTITIONER_ID = stableId('super-admin-practitioner');
const SUPER_ADMIN_MEMBERSHIP_ID = stableId('super-admin-membership');

/**
 * Ensures the Super Admin project, the super admin user (SUPER_ADMIN_EMAIL/PASSWORD; a random
 * password printed once when unset) and, when configured, the super-admin ClientApplication with
 * exactly SUPER_ADMIN_CLIENT_ID/SECRET. Every resource has a fixed id and is written with
 * update-as-create, so restarts and servers starting together converge on one set of resources.
 */
export async function bootstrapSuperAdmin(auth: AuthService, log: Logger): Promise<void> {
  const config = auth.config;
  const projectId = SUPER_ADMIN_PROJECT_ID;
  await put(auth, projectId, {
    resourceType: 'Project',
    id: projectId,
    name: 'Super Admin',
    superAdmin: true,
    strictMode: true,
    owner: { reference: `User/${SUPER_ADMIN_USER_ID}` },
  });
  await put(auth, projectId, {
    resourceType: 'User',
    id: SUPER_ADMIN_USER_ID,
    firstName: 'Super',
    lastName: 'Admin',
    email: config.superAdminEmail,
  });
  await put(auth, projectId, {
    resourceType: 'Practitioner',
    id: SUPER_ADMIN_PRACTITIONER_ID,
    name: [{ given: ['Super'], family: 'Admin' }],
  });
  await put(auth, projectId, {
    resourceType: 'ProjectMembership',
    id: SUPER_ADMIN_MEMBERSHIP_ID,
    project: { reference: `Project/${projectId}`, display: 'Super Admin' },
    user: { reference: `User/${SUPER_ADMIN_USER_ID}`, display: config.superAdminEmail },
    profile: { reference: `Practitioner/${SUPER_ADMIN_PRACTITIONER_ID}`, display: 'Super Admin' },
    userName: 'Super Admin',
    admin: true,
  });
  await ensurePassword(auth, log);
  if (config.superAdminClientId && config.superAdminClientSecret) {
    const clientId = config.superAdminClientId;
    const credential = await readCredential(auth.db, `ClientApplication/${clientId}`);
    if (!credential || !(await verifySecret(config.superAdminClientSecret, credential.hash))) {
      await storeClientSecret(auth, clientId, projectId, config.superAdminClientSecret);
    } else {
      auth.secrets.remember(`ClientApplication/${clientId}`, config.superAdminClientSecret, credential.hash);
    }
    await put(auth, projectId, { resourceType: 'ClientApplication', id: clientId, name: 'Super Admin Client' });
    await put(auth, projectId, {
      resourceType: 'ProjectMembership',
      id: stableId(`client-membership:${clientId}`),
      project: { reference: `Project/${projectId}`, display: 'Super Admin' },
      user: { reference: `ClientApplication/${clientId}`, display: 'Super Admin Client' },
      profile: { reference: `ClientApplication/${clientId}`, display: 'Super Admin Client' },
      userName: 'Super Admin Client',
      admin: true,
    });
  }
}

async function ensurePassword(auth: AuthService, log: Logger): Promise<void> {
  const { superAdminPassword, superAdminEmail } = auth.config;
  const id = `User/${SUPER_ADMIN_USER_ID}`;
  const credential = await readCredential(auth.db, id);
  if (superAdminPassword) {
    if (!credential || !(await verifySecret(superAdminPassword, credential.hash))) {
      await storePassword(auth, SUPER_ADMIN_USER_ID, SUPER_ADMIN_PROJECT_ID, superAdminPassword);
    }
    return;
  }
  if (credential) return;
  const password = randomSecret(12);
  const wrote = await writeCredential(
    auth.db,
    { id, projectId: SUPER_ADMIN_PROJECT_ID, hash: await hashSecret(password), sealed: null },
    true,
  );
  if (wrote) {
    // Printed once, on the start that created it: it is stored only as a hash.
    console.log(`Flint super admin: ${superAdminEmail} / ${password} (shown once; set SUPER_ADMIN_PASSWORD to choose it)`);
    log.warn({ email: superAdminEmail }, 'generated a super admin password (printed to stdout once)');
  }
}
