import { ALL_KEYS, changedResourceOf, resourceChangedTopic, type InvalidationBus } from '../cache/invalidation.js';
import type { Identity } from '../identity/identity.js';
import type { SqlExecutor } from '../db/database.js';
import { getSearchParameters, getSearchParametersFor, isResourceType, type SearchParameter } from '../fhir/definitions.js';
import { issue, OperationOutcomeError, outcome } from '../fhir/outcome.js';
import type { OperationOutcomeIssue, Resource } from '../fhir/types.js';
import { compileFhirPath } from './fhirpath-eval.js';
import { compileParamPlan, getIndexPlan, type ParamPlan } from './plan.js';

/**
 * A project's own search parameters: the SearchParameter resources stored in the project. Writes
 * of their base types in that project get index rows for them (same tables, under their code) and
 * searches in that project accept them like built-in parameters of their kind. Other projects do
 * not see them, and nothing of them enters the module-level caches of built-in parameters
 * (getSearchParametersFor, getIndexPlan): they live in a ProjectParameters object per project.
 *
 * Definitions are read from the database through a small per-process cache: a write of a
 * SearchParameter drops its project's entry once it commits, on this server at once and on the
 * others through the invalidation bus (watchSearchParameters); an entry is used for at most
 * PARAMETERS_TTL_MS, which bounds staleness should a notice be lost.
 */

/** How long a project's definitions are used before they are read again. */
export const PARAMETERS_TTL_MS = 10_000;
/** Projects whose definitions are cached at most (least recently loaded dropped first). */
const MAX_CACHED_PROJECTS = 1_000;

/** The parameter types a project may define: the ones the per-kind index tables hold. */
const DEFINABLE_TYPES = new Set<string>(['string', 'token', 'date', 'number', 'quantity', 'reference', 'uri']);
/** A code must be usable in a query string name: no `.` (chains), `:` (modifiers) or leading `_`. */
const CODE_PATTERN = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

/** The usable custom parameters of one project, with their index plans compiled on first use. */
export class ProjectParameters {
  private readonly byType = new Map<string, Map<string, SearchParameter>>();
  private readonly plans = new Map<string, readonly ParamPlan[]>();

  constructor(definitions: readonly SearchParameter[]) {
    for (const definition of definitions) {
      for (const base of definition.base) {
        // A base without a value (null beside an extension in `_base`) names no type; definitionProblems refuses one anyway.
        if (base === null) continue;
        let codes = this.byType.get(base);
        if (!codes) this.byType.set(base, (codes = new Map()));
        // Two definitions of one code on one type: the first (by id) wins, deterministically.
        if (!codes.has(definition.code)) codes.set(definition.code, definition);
      }
    }
  }

  /** The project's definition of `code` on `resourceType`, if it has one. */
  find(resourceType: string, code: string): SearchParameter | undefined {
    return this.byType.get(resourceType)?.get(code);
  }

  /** Every definition of the project with the resource types it applies to (the CapabilityStatement lists them). */
  *definitions(): IterableIterator<{ resourceType: string; definition: SearchParameter }> {
    for (const [resourceType, codes] of this.byType) for (const definition of codes.values()) yield { resourceType, definition };
  }

  /** The built-in plan of a type followed by the project's own parameters on it. */
  indexPlan(resourceType: string): readonly ParamPlan[] {
    const builtIn = getIndexPlan(resourceType);
    const own = this.byType.get(resourceType);
    if (!own) return builtIn;
    let plan = this.plans.get(resourceType);
    if (!plan) {
      plan = [...builtIn, ...[...own.values()].flatMap((definition) => compileOwn(definition, resourceType) ?? [])];
      this.plans.set(resourceType, plan);
    }
    return plan;
  }
}

/**
 * A project's parameter compiled with fhirpath.js only: the fast path keeps a process-wide table
 * of the element paths it has seen (element-types.ts), which client-written expressions must not
 * grow.
 */
function compileOwn(definition: SearchParameter, resourceType: string): ParamPlan | undefined {
  return compileParamPlan(definition, resourceType, 'fhirpath');
}

/** The parameters of a project that defines none. */
export const NO_PROJECT_PARAMETERS = new ProjectParameters([]);

// Validation -------------------------------------------------------------------------------------

let builtInByUrl: Map<string, SearchParameter> | undefined;

/**
 * Whether a SearchParameter restates a built-in one rather than defining a parameter: it is that
 * parameter (same url) or says it derives from it (`derivedFrom`), under the same code, as HL7's
 * own example for `_id` does. Such a resource is stored like any conformance resource and never
 * used: the built-in definition applies.
 */
export function restatesBuiltIn(resource: Resource): boolean {
  const sp = resource as Partial<SearchParameter>;
  builtInByUrl ??= new Map(getSearchParameters().map((param) => [param.url, param]));
  return [sp.url, sp.derivedFrom].some((url) => typeof url === 'string' && builtInByUrl!.get(url)?.code === sp.code);
}

/**
 * What is wrong with a SearchParameter as a definition this server can use, one issue per
 * problem, each naming its element. Empty when it can be used.
 */
export function definitionProblems(resource: Resource): OperationOutcomeIssue[] {
  const sp = resource as Partial<SearchParameter>;
  const problems: OperationOutcomeIssue[] = [];
  const code = typeof sp.code === 'string' ? sp.code : '';
  if (!CODE_PATTERN.test(code)) {
    problems.push(issue('invalid', `SearchParameter.code "${code}" must be a letter followed by up to 63 letters, digits, - or _`, 'SearchParameter.code'));
  }
  const bases = Array.isArray(sp.base) ? sp.base : [];
  if (bases.length === 0) problems.push(issue('invalid', 'SearchParameter.base must list at least one resource type', 'SearchParameter.base'));
  bases.forEach((base, index) => {
    if (base === null) {
      // `"base": [null, ...]` with an extension in `_base`: FHIR JSON's form for a value left out.
      problems.push(issue('invalid', 'SearchParameter.base has an item without a value: every base must name a resource type', `SearchParameter.base[${index}]`));
    } else if (!isResourceType(base)) {
      problems.push(issue('invalid', `SearchParameter.base "${base}" is not a resource type this server stores (use concrete types, not Resource or DomainResource)`, `SearchParameter.base[${index}]`));
    } else if (CODE_PATTERN.test(code) && getSearchParametersFor(base).some((builtIn) => builtIn.code === code)) {
      problems.push(issue('invalid', `SearchParameter.code "${code}" is already a search parameter of ${base}: choose another code`, 'SearchParameter.code'));
    }
  });
  const type = String(sp.type ?? '');
  if (!DEFINABLE_TYPES.has(type)) {
    problems.push(
      issue(
        'not-supported',
        `SearchParameter.type "${type}" is not supported for a project's own parameters: use one of ${[...DEFINABLE_TYPES].join(', ')}`,
        'SearchParameter.type',
      ),
    );
  }
  problems.push(...expressionProblems(sp, bases.filter((base) => base !== null)));
  return problems;
}

function expressionProblems(sp: Partial<SearchParameter>, bases: readonly string[]): OperationOutcomeIssue[] {
  if (typeof sp.expression !== 'string' || sp.expression.trim() === '') {
    return [issue('invalid', 'SearchParameter.expression is required: the FHIRPath expression that gives the values to index', 'SearchParameter.expression')];
  }
  if (!compileFhirPath(sp.expression)) {
    return [issue('invalid', `SearchParameter.expression "${sp.expression}" is not a FHIRPath expression this server can parse`, 'SearchParameter.expression')];
  }
  if (!DEFINABLE_TYPES.has(String(sp.type))) return [];
  const problems: OperationOutcomeIssue[] = [];
  for (const base of bases.filter((b) => isResourceType(b))) {
    const plan = compileOwn({ ...(sp as SearchParameter), code: 'x' }, base);
    if (!plan) {
      problems.push(issue('invalid', `SearchParameter.expression "${sp.expression}" has no part that applies to ${base}: start it at ${base}`, 'SearchParameter.expression'));
    }
  }
  return problems;
}

/**
 * Refuses (400) a SearchParameter written into `projectId` that this server cannot use, or whose
 * code another SearchParameter of the project already defines on one of its base types. Runs in
 * the write's transaction (the SearchParameter write hook), so a refused write is rolled back.
 */
export async function checkDefinition(tx: SqlExecutor, resource: Resource, projectId: string): Promise<void> {
  if (restatesBuiltIn(resource)) return;
  const problems = definitionProblems(resource);
  if (problems.length === 0) {
    const sp = resource as SearchParameter;
    for (const other of await readDefinitions(tx, projectId)) {
      if (other.id === sp.id || other.code !== sp.code) continue;
      const shared = other.base.filter((base) => base !== null && sp.base.includes(base));
      if (shared.length > 0) {
        problems.push(
          issue('invalid', `SearchParameter/${other.id} of this project already defines "${sp.code}" on ${shared.join(', ')}`, 'SearchParameter.code'),
        );
      }
    }
  }
  if (problems.length > 0) throw new OperationOutcomeError(outcome(problems), 400);
}

// Loading and caching ----------------------------------------------------------------------------

interface StoredDefinition {
  id: string;
  versionId: string;
  content: string;
}

/** The project's stored SearchParameters (current versions), ordered by id. */
function readStored(db: SqlExecutor, projectId: string): Promise<StoredDefinition[]> {
  return db.query<StoredDefinition>(
    `SELECT id, "versionId"::text AS "versionId", content::text AS content FROM resource
     WHERE "projectId" = $1 AND "resourceType" = 'SearchParameter' AND NOT deleted ORDER BY id`,
    [projectId],
  );
}

/** The usable definitions among stored ones: retired ones, restatements and invalid ones are left out, never an error. */
function usableDefinitions(stored: readonly StoredDefinition[]): SearchParameter[] {
  return stored
    .map((row) => JSON.parse(row.content) as SearchParameter)
    .filter((sp) => sp.status !== 'retired' && !restatesBuiltIn(sp) && definitionProblems(sp).length === 0);
}

async function readDefinitions(db: SqlExecutor, projectId: string): Promise<SearchParameter[]> {
  return usableDefinitions(await readStored(db, projectId));
}

function toParameters(stored: readonly StoredDefinition[]): ProjectParameters {
  const definitions = usableDefinitions(stored);
  return definitions.length === 0 ? NO_PROJECT_PARAMETERS : new ProjectParameters(definitions);
}

/** A project's parameters read now, bypassing the cache (reindex wants the current definitions). */
export async function loadProjectParameters(db: SqlExecutor, projectId: string): Promise<ProjectParameters> {
  return toParameters(await readStored(db, projectId));
}

interface CacheEntry {
  parameters: ProjectParameters;
  expires: number;
  /** The ids and versions read: when a reload reads the same, the compiled parameters are kept. */
  versions: string;
}

const cache = new Map<string, CacheEntry>();
/** Bumped on every local change: a load that started before it must not fill the cache. */
let generation = 0;

/**
 * A project's parameters, from the cache when read less than PARAMETERS_TTL_MS ago. `db` may be
 * an open transaction (on PGlite it must be, inside one); the transaction never wrote a
 * SearchParameter before this is called, so what it reads is committed data.
 */
export async function projectParameters(db: SqlExecutor, projectId: string): Promise<ProjectParameters> {
  const now = Date.now();
  const hit = cache.get(projectId);
  if (hit && hit.expires > now) return hit.parameters;
  const started = generation;
  const stored = await readStored(db, projectId);
  const versions = stored.map((row) => `${row.id}@${row.versionId}`).join(',');
  // Unchanged since the last read (the usual case): no parsing or compiling again.
  const parameters = hit?.versions === versions ? hit.parameters : toParameters(stored);
  if (started === generation) {
    cache.delete(projectId);
    cache.set(projectId, { parameters, expires: now + PARAMETERS_TTL_MS, versions });
    if (cache.size > MAX_CACHED_PROJECTS) cache.delete(cache.keys().next().value!);
  }
  return parameters;
}

/** Called once a write of a SearchParameter in `projectId` has committed (src/storage/repository.ts). */
export function searchParametersChanged(projectId: string): void {
  generation++;
  if (projectId === ALL_PROJECTS) cache.clear();
  else cache.delete(projectId);
}

/** searchParametersChanged(ALL_PROJECTS) forgets every project's parameters. */
export const ALL_PROJECTS = ALL_KEYS;

/** Another server's SearchParameter write clears this server's copy of that project's parameters at once. */
export function watchSearchParameters(bus: InvalidationBus): void {
  bus.subscribe(resourceChangedTopic('SearchParameter'), (key) => searchParametersChanged(changedResourceOf(key)?.projectId ?? ALL_PROJECTS));
}

/**
 * The parameters a search uses: those of the caller's project, or, for a super admin narrowing
 * the search to one project with `_project=<id>`, those of that project.
 */
export function parametersForSearch(db: SqlExecutor, identity: Identity, params: readonly [string, string][]): Promise<ProjectParameters> {
  let projectId = identity.projectId;
  if (identity.superAdmin) {
    const narrowed = params.filter(([name]) => name === '_project');
    if (narrowed.length === 1 && !narrowed[0][1].includes(',')) projectId = narrowed[0][1];
  }
  return projectParameters(db, projectId);
}
