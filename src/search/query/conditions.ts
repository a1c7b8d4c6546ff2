import { getSearchParametersFor, isResourceType, type SearchParameter } from '../../fhir/definitions.js';
import { errors } from '../../fhir/outcome.js';
import { findCompositePlan } from '../../indexing/composite.js';
import type { ProjectParameters } from '../../indexing/parameters.js';
import { compileChain, compileHas } from './conditions/chain-has.js';
import { compileComposite } from './conditions/composite.js';
import { dateParameter } from './conditions/date.js';
import { compileFilter, ENDS_WITH_MODIFIER, type FilterCompiler } from './conditions/filter.js';
import { checkTargetTypes, findParameter, isSearchable, parameterCodes } from './conditions/lookup.js';
import { numberParameter, quantityParameter } from './conditions/number-quantity.js';
import { compileReferenceIdentifier, referenceParameter } from './conditions/reference.js';
import { codesArg, missingCondition, notSupported, ownRowsExist, rowsExist, rowsOfCodes, unsupportedModifier } from './conditions/shared.js';
import { compileId, compileLastUpdated, compileProject } from './conditions/special.js';
import { stringParameter } from './conditions/string.js';
import { tokenParameter } from './conditions/token.js';
import { uriParameter } from './conditions/uri.js';
import type { CompileContext, ResolvedParameter, RowsOf } from './conditions/types.js';
import { splitOr } from './values.js';

/**
 * Turns one search parameter (name with modifiers, chains or `_has`, and its comma-separated
 * values) into a SQL condition on a resource alias. The condition is an EXISTS over the index
 * table of the parameter's kind, keyed like the table's search index: (projectId, resourceType,
 * code, value...). Values are normalised and capped exactly as the indexer stores them. This file
 * resolves the name and dispatches by kind; each kind has its own file in conditions/.
 */

/** An indexed kind's condition for a parameter's values (split at commas), on its index rows `x`. */
type KindCondition = (name: string, modifier: string | undefined, values: readonly string[], rows: RowsOf, x: string, ctx: CompileContext) => string;

/** The index table and the values' condition of each kind the indexer stores rows for. */
const KINDS: Partial<Record<SearchParameter['type'], { table: string; condition: KindCondition }>> = {
  string: { table: 'string_index', condition: stringParameter },
  token: { table: 'token_index', condition: tokenParameter },
  date: { table: 'date_index', condition: dateParameter },
  number: { table: 'number_index', condition: numberParameter },
  quantity: { table: 'quantity_index', condition: quantityParameter },
  reference: { table: 'reference_index', condition: referenceParameter },
  uri: { table: 'uri_index', condition: uriParameter },
};

/** The index table of a parameter kind's rows, if the indexer stores rows for it. */
export function indexTableOf(kind: SearchParameter['type']): string | undefined {
  return KINDS[kind]?.table;
}

/**
 * Search features of FHIR that this server does not offer, refused with a 400 `not-supported`
 * (or a warning under lenient handling) that says so, rather than as unknown parameters.
 */
const UNSUPPORTED_PARAMETERS = new Map<string, string>([
  ['_text', '_text (search on the narrative) is not supported: no full-text index is kept'],
  ['_content', '_content (full-text search on the whole resource) is not supported: no full-text index is kept'],
  ['_list', '_list is not supported: search the List and _include=List:item instead'],
  ['_query', '_query (named queries) is not supported'],
  ['_contained', '_contained is not supported: contained resources are not indexed'],
  ['_containedType', '_containedType is not supported: contained resources are not indexed'],
]);

/**
 * Resolves `name` (with a modifier, `name:exact`, a chain, `subject:Patient.name`, or a `_has`,
 * `_has:Observation:patient:code`) on `types`, or throws the 400 that compiling it would.
 */
export function resolveParameter(name: string, types: readonly string[], parameters: ProjectParameters | undefined): ResolvedParameter {
  if (name.startsWith('_has:')) return { kind: 'has' };
  if (name === '_filter') return { kind: 'filter' };
  const dot = name.indexOf('.');
  if (dot > 0) return { kind: 'chain', dot };
  const colon = name.indexOf(':');
  const code = colon < 0 ? name : name.slice(0, colon);
  const modifier = colon < 0 ? undefined : name.slice(colon + 1);
  if (code === '_id') return { kind: 'id', modifier };
  if (code === '_lastUpdated') return { kind: 'lastUpdated', modifier };
  if (code === '_project') return { kind: 'project', modifier };
  const unsupported = UNSUPPORTED_PARAMETERS.get(code);
  if (unsupported) throw notSupported(unsupported, name);
  const param = findParameter(code, types, name, parameters);
  if (modifier === ENDS_WITH_MODIFIER) throw unsupportedModifier(name, modifier, param.type);
  if (param.type === 'composite') return { kind: 'composite', code, modifier };
  if (!isSearchable(param)) {
    const why = param.type === 'special' ? ' (special parameters such as near need their own index)' : '';
    throw notSupported(`Search parameter "${code}" (${param.type}) is not supported by this server${why}`, name);
  }
  // The stored code: a parameter may read another's rows (findParameter).
  if (param.type === 'reference' && modifier !== undefined && isResourceType(modifier)) checkTargetTypes(name, code, param, [modifier]);
  if (modifier !== 'identifier') return { kind: 'indexed', code: param.code, codes: parameterCodes(code, types, name, parameters), modifier, param };
  if (param.type !== 'reference') throw unsupportedModifier(name, modifier, param.type);
  return { kind: 'reference-identifier', code, param };
}

/** SQL for `name=value` on `alias`, whose resource type is one of `types`. */
export function compileParameter(name: string, value: string, types: readonly string[], alias: string, ctx: CompileContext): string {
  return compileResolved(name, resolveParameter(name, types, ctx.parameters), value, types, alias, ctx);
}

/** SQL for `name=value` on `alias`, its name resolved already (resolveParameter with the same types). */
export function compileResolved(
  name: string,
  resolved: ResolvedParameter,
  value: string,
  types: readonly string[],
  alias: string,
  ctx: CompileContext,
): string {
  switch (resolved.kind) {
    case 'has':
      return compileHas(name, value, types, alias, ctx, compileParameter);
    case 'filter':
      return compileFilter(value, types, alias, ctx, FILTER_COMPILER);
    case 'chain':
      return compileChain(name, resolved.dot, value, types, alias, ctx, compileParameter);
    case 'id':
      return compileId(name, resolved.modifier, value, alias, ctx);
    case 'lastUpdated':
      return compileLastUpdated(name, resolved.modifier, value, alias, ctx);
    case 'project':
      return compileProject(name, resolved.modifier, value, alias, ctx);
    case 'composite':
      return compileComposite(name, resolved.code, resolved.modifier, value, types, alias, ctx);
    case 'reference-identifier':
      return compileReferenceIdentifier(name, resolved.code, value, alias, ctx);
    case 'indexed':
      return compileIndexed(name, resolved.codes, resolved.modifier, resolved.param, value, alias, ctx);
  }
}

const FILTER_COMPILER: FilterCompiler = {
  resolve: (name, types, ctx) => resolveParameter(name, types, ctx.parameters),
  compile: compileResolved,
};

/** A parameter of an indexed kind: a test of its index rows that belong to the resource `alias`. */
function compileIndexed(
  name: string,
  codes: readonly string[],
  modifier: string | undefined,
  param: SearchParameter,
  value: string,
  alias: string,
  ctx: CompileContext,
): string {
  const kind = KINDS[param.type];
  if (!kind) throw errors.invalid(`Search parameter "${name}" (${param.type}) is not supported by this server`, name);
  const codeArg = codesArg(codes, ctx.args);
  // Probed per resource (and its rows not read), a union parameter's codes are one test on the
  // resource's own rows, read once through the primary key (as branches, each code's read them again).
  const table = ctx.perRow && (!ctx.onRows || ctx.rowsUnread) ? kind.table : rowsOfCodes(kind.table, codes, ctx);
  const x = `x${ctx.depth}`;
  const rowsOf: RowsOf = (condition, indexed, point) => {
    ctx.onRows?.({ table, indexTable: kind.table, codeArg, condition, indexed, alias: x, depth: ctx.depth });
    return rowsExist(table, codeArg, alias, x, condition, ctx.perRow, point === true && codes.length === 1 && table === kind.table);
  };
  if (modifier === 'missing') return missingCondition(name, value, () => rowsOf(undefined), () => ownRowsExist(kind.table, codeArg, alias, x));
  const values = splitOr(value);
  if (values.some((v) => v === '') && param.type !== 'token') {
    throw errors.invalid(`Empty value in search parameter ${name}`, name);
  }
  return kind.condition(name, modifier, values, rowsOf, x, ctx);
}

/** The parameters of a type that search answers (for the CapabilityStatement). */
export function searchableParameters(resourceType: string): SearchParameter[] {
  return getSearchParametersFor(resourceType).filter(
    (param) => isSearchable(param) || (param.type === 'composite' && findCompositePlan(resourceType, param.code) !== undefined),
  );
}
