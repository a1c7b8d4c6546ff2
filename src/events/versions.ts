import type { Repository } from '../storage/repository.js';
import type { Resource } from '../fhir/types.js';
import type { ChangedVersion } from './matching.js';
import type { OutboxRow } from './outbox.js';

/** How far back the version before a change is looked for in the resource's history. */
const HISTORY_DEPTH = 50;

/**
 * The versions of many changes of one project, as cheaply as the subscriptions allow: the current
 * versions in one read (from this server's cache when it holds them), the texts of versions
 * superseded since in one more; a delete, or a change whose version before it is needed
 * (`%previous`), is read on its own from the history. `repo` must read the primary: a replica
 * may not hold the version yet.
 */
export async function changedVersions(repo: Repository, rows: readonly OutboxRow[], withPrevious: boolean): Promise<ChangedVersion[]> {
  const alone = (row: OutboxRow) => withPrevious || row.interaction === 'delete';
  const current = await repo.readVersions(rows.filter((row) => !alone(row)).map((row) => ({ resourceType: row.resourceType, id: row.resourceId })));
  const superseded = rows.filter((row) => !alone(row) && current.get(`${row.resourceType}/${row.resourceId}`)?.versionId !== row.versionId);
  const older = superseded.length === 0 ? new Map<string, string>() : await repo.readVersionTexts(superseded.map((row) => ({ resourceType: row.resourceType, id: row.resourceId, versionId: row.versionId })));
  return Promise.all(rows.map(async (row): Promise<ChangedVersion> => {
    if (alone(row)) return changedVersion(repo, row);
    const now = current.get(`${row.resourceType}/${row.resourceId}`);
    const isCurrent = now?.versionId === row.versionId;
    const text = (isCurrent ? now.text : older.get(row.versionId)) ?? undefined;
    return { change: changeOf(row), resource: parse(text ?? null), text, previous: undefined, current: isCurrent };
  }));
}

/** A change's version as its row names it, not read: for channels that read it themselves. */
export function unreadVersion(row: OutboxRow): ChangedVersion {
  return { change: changeOf(row), resource: undefined, previous: undefined, current: false };
}

function changeOf(row: OutboxRow): ChangedVersion['change'] {
  return { projectId: row.projectId, resourceType: row.resourceType, id: row.resourceId, versionId: row.versionId, interaction: row.interaction };
}

/**
 * The version a change wrote, the one before it (`%previous`; for a delete, the deleted content),
 * and whether it is still current (what the search index holds).
 */
async function changedVersion(repo: Repository, row: OutboxRow): Promise<ChangedVersion> {
  const text = row.interaction === 'delete' ? undefined : ((await repo.readHistoryVersion(row.resourceType, row.resourceId, row.versionId)).text ?? undefined);
  const written = parse(text ?? null);
  const previous = row.interaction === 'create' ? undefined : await versionBefore(repo, row);
  const current = await isCurrent(repo, row);
  return { change: changeOf(row), resource: written ?? previous, text, previous, current };
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
