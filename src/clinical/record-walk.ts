import type { SearchRow } from '../search/service.js';
import type { EverythingPosition, RecordPart, ReferencedPlan } from './everything-cursor.js';
import { nextPatient, readMatches, readPatientItself, type After, type RecordSource } from './record-pages.js';
import { readReferenced } from './record-referenced.js';

/**
 * One page of a walk through patients' records: each record is the patient itself, the rest of
 * its compartment (`match`), then the resources they reference (`include`), each part in
 * (type, id) order, so a position after
 * the last entry is enough to go on (keyset, no OFFSET): no entry is seen twice and none is
 * skipped while the data stands still. Usually one statement per page; a page that crosses from
 * one part or one patient to the next reads each.
 */

export interface WalkEntry {
  row: SearchRow;
  part: RecordPart;
  patientId: string;
  /** Of an `include` entry, the side its part was read from (the next page's cursor carries it). */
  plan?: ReferencedPlan;
}

export interface WalkPage {
  entries: WalkEntry[];
  /** Where the next page starts; undefined at the end of the walk. */
  next?: EverythingPosition;
}

/** Where the walk starts: one patient's record, or (type level) every patient the caller sees. */
export type WalkScope = { kind: 'patient'; patientId: string } | { kind: 'patients' };

export async function readWalkPage(
  source: RecordSource,
  scope: WalkScope,
  from: EverythingPosition | undefined,
  count: number,
): Promise<WalkPage> {
  const entries: WalkEntry[] = [];
  let position = from ?? (await firstPosition(source, scope));
  // One more than the page holds tells whether another page follows.
  while (position && entries.length <= count) {
    const wanted = count + 1 - entries.length;
    const after = position.resourceType === '' ? undefined : { resourceType: position.resourceType, id: position.id };
    const part = position.part;
    const { rows, plan } = await readPart(source, position, after, wanted);
    for (const row of rows) entries.push({ row, part, patientId: position.patientId, plan });
    if (rows.length === wanted) break;
    position = await followingPart(source, scope, position);
  }
  if (entries.length <= count) return { entries };
  const last = entries[count - 1];
  const next: EverythingPosition = { patientId: last.patientId, part: last.part, resourceType: last.row.resourceType, id: last.row.id };
  if (last.plan) next.plan = last.plan;
  return { entries: entries.slice(0, count), next };
}

async function readPart(source: RecordSource, position: EverythingPosition, after: After | undefined, wanted: number): Promise<{ rows: SearchRow[]; plan?: ReferencedPlan }> {
  if (position.part === 'include') return readReferenced(source, position.patientId, after, wanted, position.plan);
  if (position.part === 'match') return { rows: await readMatches(source, position.patientId, after, wanted) };
  // The patient part holds one resource: once passed, it is empty.
  return { rows: after ? [] : await readPatientItself(source, position.patientId) };
}

async function firstPosition(source: RecordSource, scope: WalkScope): Promise<EverythingPosition | undefined> {
  const patientId = scope.kind === 'patient' ? scope.patientId : await nextPatient(source, undefined);
  return patientId === undefined ? undefined : startOf(patientId);
}

/** The start of the part after `position`'s part: the compartment, the referenced resources, then the next patient's record. */
async function followingPart(source: RecordSource, scope: WalkScope, position: EverythingPosition): Promise<EverythingPosition | undefined> {
  if (position.part === 'patient') return { patientId: position.patientId, part: 'match', resourceType: '', id: '' };
  if (position.part === 'match') return { patientId: position.patientId, part: 'include', resourceType: '', id: '' };
  if (scope.kind === 'patient') return undefined;
  const patientId = await nextPatient(source, position.patientId);
  return patientId === undefined ? undefined : startOf(patientId);
}

function startOf(patientId: string): EverythingPosition {
  return { patientId, part: 'patient', resourceType: '', id: '' };
}
