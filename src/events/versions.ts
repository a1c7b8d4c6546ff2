import type { Repository } from '../storage/repository.js';
import type { Resource } from '../fhir/types.js';
import type { ChangedVersion } from './matching.js';
import type { OutboxRow } from './outbox.js';

/** How far back the version before a change is looked for in the resource's history. */
const HISTORY_DEPTH = 50;

/**
 * The version a change wrote, the one before it (`%previous`; for a delete, the deleted content),
 * and whether it is still current (what the search index holds).
 */
export async function changedVersion(repo: Repository, row: OutboxRow): Promise<ChangedVersion> {
  const change = { projectId: row.projectId, resourceType: row.resourceType, id: row.resourceId, versionId: row.versionId, interaction: row.interaction };
  const written = row.interaction === 'delete' ? undefined : parse((await repo.readHistoryVersion(row.resourceType, row.resourceId, row.versionId)).text);
  const previous = row.interaction === 'create' ? undefined : await versionBefore(repo, row);
  const current = await isCurrent(repo, row);
  return { change, resource: written ?? previous, previous, current };
}

async function versionBefore(repo: Repository, row: OutboxRow): Promise<Resource | undefined> {
  const page = await repo.history(row.resourceType, row.resourceId, { count: HISTORY_DEPTH });
  const index = page.versions.findIndex((version) => version.versionId === row.versionId);
  const before = index < 0 ? undefined : page.versions.slice(index + 1).find((version) => !version.deleted);
  return before ? parse(before.text) : undefined;
}

async function isCurrent(repo: Repository, row: OutboxRow): Promise<boolean> {
  try {
    return (await repo.readVersion(row.resourceType, row.resourceId, 'primary')).versionId === row.versionId;
  } catch {
    return false;
  }
}

function parse(text: string | null): Resource | undefined {
  return text === null ? undefined : (JSON.parse(text) as Resource);
}
