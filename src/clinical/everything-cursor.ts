import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { errors } from '../fhir/outcome.js';

/**
 * Where a walk of Patient/$everything stands: after `resourceType/id` of `part` of the record of
 * `patientId`. Opaque to clients (base64url JSON and a MAC keyed by the server's FHIR base, so
 * every server of a deployment accepts it); the MAC refuses edited cursors, and the signature of
 * the parameters refuses a cursor reused with other filters, whose position would mean nothing.
 */
export interface EverythingPosition {
  patientId: string;
  /** `patient`: the patient itself; `match`: the rest of its compartment; `include`: the resources they reference. */
  part: RecordPart;
  resourceType: string;
  id: string;
  /**
   * In the `include` part, the side its pages are read from, as counted for its first page
   * (record-referenced.ts): later pages read from it without counting again. Both sides give the
   * same rows, so a side that no longer suits the data costs time, never an entry.
   */
  plan?: ReferencedPlan;
}

export type RecordPart = 'patient' | 'match' | 'include';

/** Where the referenced part is read from: the record's rows, or the project's followed reference rows. */
export type ReferencedPlan = 'record' | 'followed';

const PARTS: ReadonlySet<string> = new Set<RecordPart>(['patient', 'match', 'include']);
const PLANS: ReadonlySet<string> = new Set<ReferencedPlan>(['record', 'followed']);

const VERSION = 1;

/** A digest of the filters a cursor is valid for. */
export function filterSignature(filters: unknown): string {
  return createHash('sha256').update(JSON.stringify(filters)).digest('base64url').slice(0, 16);
}

function tag(key: string, payload: string): string {
  return createHmac('sha256', `flint-everything:${key}`).update(payload).digest('base64url').slice(0, 22);
}

export function encodePosition(key: string, signature: string, position: EverythingPosition): string {
  const fields = [VERSION, signature, position.patientId, position.part, position.resourceType, position.id];
  if (position.plan) fields.push(position.plan);
  const payload = Buffer.from(JSON.stringify(fields)).toString('base64url');
  return `${payload}.${tag(key, payload)}`;
}

export function decodePosition(key: string, signature: string, cursor: string): EverythingPosition {
  const invalid = (why: string) => errors.invalid(`Invalid _cursor: ${why}. Follow the next link of the previous page`, '_cursor');
  const [payload, given, extra] = cursor.split('.');
  if (!payload || !given || extra !== undefined) throw invalid('malformed');
  const expected = Buffer.from(tag(key, payload));
  if (expected.length !== Buffer.byteLength(given) || !timingSafeEqual(expected, Buffer.from(given))) {
    throw invalid('it was altered or not made by this server');
  }
  let fields: unknown;
  try {
    fields = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    throw invalid('malformed');
  }
  // Cursors made before the plan was carried have six fields: their walks go on, counting each page.
  if (!Array.isArray(fields) || (fields.length !== 6 && fields.length !== 7) || fields[0] !== VERSION || !fields.slice(1).every((f) => typeof f === 'string')) {
    throw invalid('malformed');
  }
  const [, madeFor, patientId, part, resourceType, id, plan] = fields as [number, string, string, string, string, string, string?];
  if (!PARTS.has(part) || (plan !== undefined && (part !== 'include' || !PLANS.has(plan)))) throw invalid('malformed');
  if (madeFor !== signature) throw invalid('it belongs to a different request (patient or parameters changed)');
  const position: EverythingPosition = { patientId, part: part as RecordPart, resourceType, id };
  if (plan !== undefined) position.plan = plan as ReferencedPlan;
  return position;
}
