import type { SqlExecutor } from '../db/database.js';
import type { Resource } from '../fhir/types.js';

/**
 * Work that must commit or roll back together with a write of one resource type: terminology
 * indexes a CodeSystem's concepts this way (src/terminology/indexing.ts). It runs inside the
 * write's transaction, after the resource row is written; `resource` is null for a delete.
 */
export type WriteHook = (
  tx: SqlExecutor,
  change: { resourceType: string; id: string; projectId: string; resource: Resource | null },
) => Promise<void>;

const writeHooks = new Map<string, WriteHook>();

/** Registers the one write hook of a resource type (a narrow extension point, not an event bus). */
export function registerWriteHook(resourceType: string, hook: WriteHook): void {
  writeHooks.set(resourceType, hook);
}

/**
 * The write hook of a resource type, for code that writes resource rows inside a transaction of
 * its own (Project/$init, invite, Project/$clone): it runs the hook in that transaction, after the
 * row is written, as the repository does.
 */
export function writeHookOf(resourceType: string): WriteHook | undefined {
  return writeHooks.get(resourceType);
}
