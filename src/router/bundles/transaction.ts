import { newId } from '../../storage/ids.js';
import type { RequestContext } from '../../operations/context.js';
import { errors } from '../../fhir/outcome.js';
import type { Resource } from '../../fhir/types.js';
import { conditionalCriteria, lockedMatch, searchOfHeader } from '../conditional.js';
import { existingResponse } from '../handlers/conditional.js';
import { writeResponse } from '../handlers/writes.js';
import { assertRouteAccess } from '../../access/type-access.js';
import { ItemError, type PreparedCreates } from '../../storage/types.js';
import { notFound } from '../not-found.js';
import { resolveOperation } from '../../operations/registry.js';
import { prefersAsync } from '../../operations/jobs/async-jobs.js';
import { textResponse } from '../responses.js';
import type { EntryRouter, FhirResponse, RouteMatch } from '../types.js';
import { type BundleEntryRequest, entryError, failedEntry, readEntry, responseEntryText, withResource } from './entries.js';
import { mapReferences } from './references.js';
import { conditionalReferencesOf, resolveConditionalReferences } from './conditional-references.js';
import { conditionalCreateTarget, laterAnswer, SameCreates } from './same-creates.js';
import { assertOneWritePerResource } from './write-targets.js';

/** http.html 3.1.0.11.2: deletes, then creates, then updates and patches, then reads (which see the writes). */
const PHASES: readonly (readonly string[])[] = [['DELETE'], ['POST'], ['PUT', 'PATCH'], ['GET', 'HEAD']];

interface PlannedEntry extends BundleEntryRequest {
  found: RouteMatch;
}

/**
 * A transaction: every entry in one database transaction, all or nothing. A failing entry fails the
 * whole Bundle with its own status and an OperationOutcome naming it (`Bundle.entry[3]`).
 */
export async function runTransaction(router: EntryRouter, ctx: RequestContext, raw: unknown[], prefer: string | undefined): Promise<FhirResponse> {
  if (ctx.database.kind === 'pglite' && raw.length > ctx.config.embeddedTransactionEntries) {
    throw errors.tooLarge(
      `The transaction has ${raw.length} entries; the embedded database takes at most ${ctx.config.embeddedTransactionEntries} (EMBEDDED_TRANSACTION_ENTRIES): split it, or use PostgreSQL`,
    );
  }
  const entries = raw.map((entry, index) => plan(router, readEntry(entry, index, ctx.config.fhirBaseUrl, prefer)));
  assertOneWritePerResource(entries);
  // Work that needs no database (ids, references, validation, index rows) is done before the
  // transaction opens, so that it holds its connection (the embedded database's only one) just
  // while it writes. Conditions and conditional references are searched inside it.
  const references = conditionalReferencesOf(entries);
  const early = references.size > 0 || hasConditionalEntry(entries) ? undefined : await prepareEntries(ctx, entries, references);
  if (early && writtenInOneStatement(early, entries)) return transactionResponse(ctx, await writeAnswers(ctx, early.creates));
  const answers = await ctx.inTransaction(async (tx) => {
    const { rewritten, creates, answered, same } = early ?? (await prepareEntries(tx, entries, references));
    for (const methods of PHASES) {
      const phase = rewritten.filter((entry) => methods.includes(entry.request.method) && !answered.has(entry.index) && !same.later.has(entry.index));
      if (methods.includes('POST')) for (const [index, answer] of await writeCreates(tx, creates)) answered.set(index, answer);
      for (const entry of phase) {
        if (!answered.has(entry.index)) answered.set(entry.index, await runEntry(router, tx, entry));
      }
    }
    for (const [index, first] of same.later) answered.set(index, laterAnswer(entries[index].request, first, answered.get(first.index)!));
    return entries.map((entry) => answered.get(entry.index)!);
  });
  return transactionResponse(ctx, answers);
}

function transactionResponse(ctx: RequestContext, answers: readonly FhirResponse[]): FhirResponse {
  const base = ctx.config.fhirBaseUrl;
  return textResponse(`{"resourceType":"Bundle","type":"transaction-response","entry":[${answers.map((a) => responseEntryText(a, base)).join(',')}]}`);
}

function plan(router: EntryRouter, entry: BundleEntryRequest): PlannedEntry {
  const { request, index } = entry;
  const found = router.match(request.method, request.path);
  if (!found) throw failedEntry(index, notFound(request.method, request.path));
  if (found.route.refusedInTransaction || changesData(found, index, request.header('prefer'))) {
    throw entryError(index, `${request.method} ${request.path || '[base]'} cannot be part of a transaction, which must be able to roll it back: send it in a batch`, 'request');
  }
  return { ...entry, found };
}

/**
 * An operation that changes data may write where a rollback cannot reach (accounts, jobs, other
 * projects, work in the background): refused, unless its registration says a rollback undoes all
 * it does. One that only reads runs in the transaction and sees its writes. The asynchronous form
 * (`Prefer: respond-async`) writes only its AsyncJob and queued job, in the transaction: the job
 * is queued if the transaction commits, and runs after it, seeing what it wrote.
 */
function changesData({ route, params }: RouteMatch, index: number, prefer: string | undefined): boolean {
  if (!route.operationLevel) return false;
  try {
    const operation = resolveOperation(params.op!.slice(1), route.operationLevel, params.type);
    if (operation.respondsAsync === true && prefersAsync(prefer)) return false;
    return operation.definition.affectsState === true && operation.rollsBack !== true;
  } catch (error) {
    throw failedEntry(index, error);
  }
}

/**
 * Gives each create its id before anything is written, so references to its fullUrl can be
 * rewritten: a conditional create that finds its match answers with it and maps to it instead, and
 * a later one of the same criteria maps to the first's resource (`same`).
 */
async function assignIds(tx: RequestContext, entries: PlannedEntry[], answered: Map<number, FhirResponse>, same: SameCreates): Promise<Map<string, string>> {
  const ids = new Map<string, string>();
  for (const entry of entries) {
    const { request, fullUrl } = entry;
    const type = entry.found.params.type;
    if (request.method === 'PUT' && fullUrl && entry.found.params.id) ids.set(fullUrl, request.path);
    if (request.method === 'PUT' && fullUrl && type && !entry.found.params.id) {
      ids.set(fullUrl, `${type}/${await conditionalUpdateTarget(tx, entry, type)}`);
    }
    if (request.method !== 'POST' || !type) continue;
    const reference = await createdReference(tx, entry, type, answered, same);
    if (fullUrl) ids.set(fullUrl, reference);
  }
  return ids;
}

/**
 * The `Type/id` a create entry writes: the first's of its criteria, its match (answered with it),
 * or a new id given to the entry.
 */
async function createdReference(tx: RequestContext, entry: PlannedEntry, type: string, answered: Map<number, FhirResponse>, same: SameCreates): Promise<string> {
  const { request, index } = entry;
  const target = conditionalCreateTarget(request);
  const first = target === undefined ? undefined : same.firstOf(target);
  if (first) {
    same.noteLater(index, first);
    return first.reference;
  }
  const ifNoneExist = request.header('if-none-exist');
  const match = ifNoneExist === undefined ? undefined : await conditionalMatch(tx, type, ifNoneExist, index);
  if (match) answered.set(index, existingResponse(request, tx, match));
  const id = match?.id ?? newId();
  if (!match) entry.request = { ...request, assignedId: id, header: (name) => (name === 'if-none-exist' ? undefined : request.header(name)) };
  if (target !== undefined) same.noteFirst(target, { index, reference: `${type}/${id}` });
  return `${type}/${id}`;
}

/**
 * The id a conditional update entry will write, so references to its fullUrl can name it: the
 * match, else the body's id, else a new id the create will use. The criteria stay locked until the
 * transaction ends, so the entry's own search finds the same.
 */
async function conditionalUpdateTarget(tx: RequestContext, entry: PlannedEntry, type: string): Promise<string> {
  const { request, index } = entry;
  try {
    const criteria = conditionalCriteria(request.query, `Conditional update of ${type}`);
    const match = await lockedMatch(tx, type, criteria);
    if (match) return match.id;
  } catch (error) {
    throw failedEntry(index, error);
  }
  const bodyId = entry.resource?.id;
  if (typeof bodyId === 'string') return bodyId;
  const id = newId();
  entry.request = { ...request, assignedId: id };
  return id;
}

async function conditionalMatch(tx: RequestContext, type: string, ifNoneExist: string, index: number) {
  try {
    const criteria = conditionalCriteria(searchOfHeader(ifNoneExist), 'request.ifNoneExist');
    return await lockedMatch(tx, type, criteria);
  } catch (error) {
    throw failedEntry(index, error);
  }
}

/** The entry's resource with fullUrls replaced by the ids given, and conditional references by their matches. */
function rewrite(entry: PlannedEntry, ids: Map<string, string>, resolved: Map<string, string>): PlannedEntry {
  if (!entry.resource) return entry;
  const resource = mapReferences(entry.resource, (value, isReference) => {
    const target = ids.get(value) ?? (isReference ? resolved.get(value) : undefined);
    if (target !== undefined) return target;
    if (isReference && /^urn:(uuid|oid):/.test(value)) {
      throw entryError(entry.index, `the reference ${value} names no entry of the transaction (no entry has that fullUrl)`, 'resource');
    }
    return value;
  });
  return { ...withResource(entry, resource as Resource), found: entry.found };
}

/**
 * A create with its id assigned and no condition left, of a JSON resource other than a Binary
 * (whose bytes are stored apart): the creates of a transaction are written together, one
 * statement per table rather than one per entry.
 */
function isPlainCreate(entry: PlannedEntry): boolean {
  const { interaction } = entry.found.route;
  return (
    interaction !== undefined && 'type' in interaction && interaction.type === 'create' &&
    entry.request.assignedId !== undefined && entry.resource !== undefined && entry.found.params.type !== 'Binary'
  );
}

interface PreparedEntries {
  rewritten: PlannedEntry[];
  /** The plain creates, checked and made ready to be written together. */
  creates: { entries: PlannedEntry[]; prepared: PreparedCreates };
  /** Entries answered without a write of their own (a conditional create that found its match). */
  answered: Map<number, FhirResponse>;
  /** Conditional creates answered by an earlier one of the same criteria, once it is written. */
  same: SameCreates;
}

/** Ids given, references rewritten and plain creates prepared: with `ctx` a transaction's when it searches. */
async function prepareEntries(ctx: RequestContext, entries: PlannedEntry[], references: ReadonlyMap<string, number>): Promise<PreparedEntries> {
  const answered = new Map<number, FhirResponse>();
  const same = new SameCreates();
  const resolved = await resolveConditionalReferences(ctx, references);
  const ids = await assignIds(ctx, entries, answered, same);
  const rewritten = entries.map((entry) => rewrite(entry, ids, resolved));
  const plain = rewritten.filter((entry) => isPlainCreate(entry) && !answered.has(entry.index));
  return { rewritten, answered, same, creates: { entries: plain, prepared: await prepareCreates(ctx, plain) } };
}

/** A conditional create or conditional update: its search reads the data, which only the transaction may do. */
function hasConditionalEntry(entries: readonly PlannedEntry[]): boolean {
  return entries.some(({ request, fullUrl, found }) =>
    (request.method === 'POST' && request.header('if-none-exist') !== undefined) ||
    (request.method === 'PUT' && fullUrl !== undefined && found.params.id === undefined));
}

async function prepareCreates(ctx: RequestContext, entries: PlannedEntry[]): Promise<PreparedCreates> {
  for (const entry of entries) {
    try {
      assertRouteAccess(ctx.identity, entry.request.path, entry.request.query, { interaction: 'create' });
    } catch (error) {
      throw failedEntry(entry.index, error);
    }
  }
  const items = entries.map((entry) => ({ resourceType: entry.found.params.type!, input: entry.resource, id: entry.request.assignedId }));
  try {
    return await ctx.repo.prepareCreates(items);
  } catch (error) {
    throw itemFailure(entries, error);
  }
}

/**
 * Creates only, written together: their one statement is all or nothing by itself, so no
 * transaction is opened around it (two round trips fewer, and the embedded database's connection
 * held only while the statement runs).
 */
function writtenInOneStatement({ creates }: PreparedEntries, entries: readonly PlannedEntry[]): boolean {
  return creates.prepared.together !== undefined && creates.entries.length === entries.length;
}

async function writeAnswers(ctx: RequestContext, creates: PreparedEntries['creates']): Promise<FhirResponse[]> {
  const answers = await writeCreates(ctx, creates);
  return creates.entries.map((entry) => answers.get(entry.index)!);
}

async function writeCreates(tx: RequestContext, { entries, prepared }: PreparedEntries['creates']): Promise<Map<number, FhirResponse>> {
  const answers = new Map<number, FhirResponse>();
  if (entries.length === 0) return answers;
  try {
    const results = await tx.repo.createResources(prepared);
    results.forEach((result, i) => answers.set(entries[i].index, writeResponse(entries[i].request, tx, result)));
  } catch (error) {
    throw itemFailure(entries, error);
  }
  return answers;
}

function itemFailure(entries: readonly PlannedEntry[], error: unknown): unknown {
  return error instanceof ItemError ? failedEntry(entries[error.item].index, error.reason) : error;
}

async function runEntry(router: EntryRouter, tx: RequestContext, entry: PlannedEntry): Promise<FhirResponse> {
  try {
    return await router.dispatch(entry.request, { config: tx.config, database: tx.database, ctx: tx }, entry.found);
  } catch (error) {
    throw failedEntry(entry.index, error);
  }
}
