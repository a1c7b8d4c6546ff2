import { errors } from '../fhir/outcome.js';
import { isRecord, type Resource } from '../fhir/types.js';
import { getPrimitiveType, unstorableTextProblem } from '../validation/primitives.js';
import { validateResource } from '../validation/validator.js';
import {
  isOpenType,
  isRepeating,
  isResourceParameterType,
  isSimpleType,
  maxOf,
  valueKey,
  type OperationDefinition,
  type OperationParameter,
  type TypedValue,
} from './definition.js';

/**
 * Input decoding (SPEC 4.1): a Parameters body or query pairs become one object keyed by
 * parameter name, checked against the definition's `in` parameters. Every problem is a 400
 * `invalid` whose expression points at `Parameters.parameter` or the exact entry.
 */
export type OperationInput = Record<string, unknown>;

interface Entry {
  name?: unknown;
  part?: unknown;
  resource?: unknown;
  [key: string]: unknown;
}

const ROOT = 'Parameters.parameter';

export function inParameters(definition: OperationDefinition): OperationParameter[] {
  return (definition.parameter ?? []).filter((p) => p.use === 'in');
}

export function outParameters(definition: OperationDefinition): OperationParameter[] {
  return (definition.parameter ?? []).filter((p) => p.use === 'out');
}

export interface BodyOptions {
  /** An object without a `resourceType` is read as `{ parameterName: value | value[] }`, then checked like Parameters. */
  plainJson?: boolean;
  /**
   * A resource-typed in-parameter that the body may be itself: a resource other than Parameters
   * (MedplumClient posts resources bare) is that parameter's value.
   */
  bareResource?: string;
  /**
   * The operation examines the `bareResource` parameter's resource itself (`$validate`): its
   * content is not validated here, any JSON object but the operation's own Parameters is taken as
   * that resource, and the other parameters then come from `query`.
   */
  examined?: boolean;
  query?: URLSearchParams;
}

/** Decodes a POST body. An empty body is an empty Parameters. */
export function decodeBody(definition: OperationDefinition, body: unknown, options: BodyOptions = {}): OperationInput {
  const label = `$${definition.code}`;
  if (body === undefined) return decodeEntries([], inParameters(definition), ROOT, label);
  if (options.plainJson && isRecord(body) && body.resourceType === undefined) {
    return decodeBody(definition, plainJsonToParameters(definition, body));
  }
  const bare = options.bareResource;
  if (bare && options.examined && isExaminedBody(definition, body)) {
    const input = options.query ? decodeQuery(definition, options.query) : decodeEntries([], inParameters(definition), ROOT, label);
    return { ...input, [bare]: body };
  }
  if (bare && !options.examined && isRecord(body) && typeof body.resourceType === 'string' && body.resourceType !== 'Parameters') {
    return decodeBody(definition, { resourceType: 'Parameters', parameter: [{ name: bare, resource: body }] });
  }
  if (!isRecord(body) || body.resourceType !== 'Parameters') {
    throw errors.invalid(`The body of ${label} must be a Parameters resource`, 'Parameters');
  }
  const entries = body.parameter ?? [];
  if (!Array.isArray(entries)) throw errors.invalid('Parameters.parameter must be an array', ROOT);
  const input = decodeEntries(entries as Entry[], inParameters(definition), ROOT, label);
  // The entries are known to be well named and typed; the validator checks what is inside them
  // (elements of complex values, resources, extensions). R4 JSON has no empty arrays, but clients
  // that build Parameters in code send `"parameter": []` for "no parameters": a tolerance of
  // operation input only (docs/operations.md), so the validator sees the body without it.
  const { parameter: _empty, ...withoutEmpty } = body;
  const checked = entries.length === 0 ? withoutEmpty : bare && options.examined ? withoutExamined(body, entries as Entry[], bare) : body;
  validateResource(checked, { expectedType: 'Parameters' });
  return input;
}

/**
 * A body that is the examined resource itself: any JSON object but a Parameters (one without a
 * resourceType too: the operation reports that), or a Parameters with entries that are not the
 * operation's (`POST /Parameters/$validate` with the bare resource).
 */
function isExaminedBody(definition: OperationDefinition, body: unknown): body is Record<string, unknown> {
  if (!isRecord(body)) return false;
  if (body.resourceType !== 'Parameters') return true;
  const names = new Set(inParameters(definition).map((p) => p.name));
  return Array.isArray(body.parameter) && body.parameter.some((entry) => !isRecord(entry) || !names.has(entry.name as string));
}

/** The body without the examined resource, which the operation reports on itself. */
function withoutExamined(body: Record<string, unknown>, entries: Entry[], name: string): Record<string, unknown> {
  // The whole entry goes: left with its name only, it would break invariant inv-1 (a value, a resource or parts).
  const parameter = entries.filter((entry) => !isRecord(entry) || entry.name !== name || entry.resource === undefined);
  const { parameter: _all, ...rest } = body;
  return parameter.length > 0 ? { ...rest, parameter } : rest;
}

/** `{ name: "x", ids: ["a", "b"] }` → Parameters entries with the declared value types. */
function plainJsonToParameters(definition: OperationDefinition, body: Record<string, unknown>): Resource {
  const declared = inParameters(definition);
  const parameter: Entry[] = [];
  for (const [name, value] of Object.entries(body)) {
    const spec = declared.find((p) => p.name === name);
    if (!spec?.type) {
      const known = declared.map((p) => p.name).join(', ');
      throw errors.invalid(`Unknown parameter "${name}" for $${definition.code}: expected one of ${known}`, name);
    }
    for (const item of Array.isArray(value) ? value : [value]) parameter.push({ name, [valueKey(spec.type)]: item });
  }
  // `{}` (every parameter defaulted) is a Parameters without entries, not one with an empty list.
  return parameter.length > 0 ? { resourceType: 'Parameters', parameter } : { resourceType: 'Parameters' };
}

/**
 * Decodes query pairs (GET). Names starting with `_` (`_format`, `_pretty`) are the server's,
 * unless the definition declares them (`_count`, `_since` of Patient/$everything).
 * Only parameters of a simple type may appear (SPEC 4.1 rule 4).
 */
export function decodeQuery(definition: OperationDefinition, query: URLSearchParams): OperationInput {
  const label = `$${definition.code}`;
  const declared = inParameters(definition);
  const entries: Entry[] = [];
  for (const [name, raw] of query) {
    const parameter = declared.find((p) => p.name === name);
    if (name.startsWith('_') && !parameter) continue;
    if (!parameter) throw unknownParameter(name, declared, label, ROOT);
    if (!isSimpleType(parameter.type)) {
      throw errors.invalid(
        `Parameter "${name}" of ${label} has the complex type ${parameter.type ?? 'with parts'}, which cannot be given in a query string: use POST with a Parameters body`,
        ROOT,
      );
    }
    entries.push({ name, [valueKey(parameter.type!)]: fromQueryText(raw, parameter.type!, name, label) });
  }
  return decodeEntries(entries, declared, ROOT, label);
}

function fromQueryText(raw: string, type: string, name: string, label: string): unknown {
  const primitive = getPrimitiveType(type);
  if (primitive?.json === 'boolean') {
    if (raw === 'true' || raw === 'false') return raw === 'true';
    throw errors.invalid(`Parameter "${name}" of ${label} must be true or false, not "${raw}"`, ROOT);
  }
  if (primitive?.json === 'number') {
    if (/^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/.test(raw)) return Number(raw);
    throw errors.invalid(`Parameter "${name}" of ${label} must be ${primitive.expected}, not "${raw}"`, ROOT);
  }
  return raw;
}

function decodeEntries(entries: Entry[], declared: OperationParameter[], path: string, label: string): OperationInput {
  const values = new Map<string, unknown[]>();
  entries.forEach((entry, index) => {
    const at = `${path}[${index}]`;
    if (!isRecord(entry) || typeof entry.name !== 'string') {
      throw errors.invalid(`Each entry of ${path} needs a name`, at);
    }
    const parameter = declared.find((p) => p.name === entry.name);
    if (!parameter) throw unknownParameter(entry.name, declared, label, at);
    const list = values.get(parameter.name) ?? [];
    list.push(decodeValue(entry, parameter, at, label));
    values.set(parameter.name, list);
  });
  const input: OperationInput = {};
  for (const parameter of declared) {
    const list = values.get(parameter.name) ?? [];
    if (list.length < parameter.min) {
      throw errors.invalid(`Missing required parameter "${parameter.name}" of ${label}: it is expected at least ${parameter.min} time(s)`, path);
    }
    if (list.length > maxOf(parameter)) {
      throw errors.invalid(
        `Parameter "${parameter.name}" of ${label} may appear at most ${parameter.max} time(s), got ${list.length}`,
        path,
      );
    }
    if (isRepeating(parameter)) input[parameter.name] = list;
    else if (list.length > 0) input[parameter.name] = list[0];
  }
  return input;
}

function decodeValue(entry: Entry, parameter: OperationParameter, at: string, label: string): unknown {
  const name = `Parameter "${parameter.name}" of ${label}`;
  const valueKeys = Object.keys(entry).filter((key) => key.startsWith('value'));
  if (parameter.part?.length && !parameter.type) {
    if (!Array.isArray(entry.part) || valueKeys.length > 0 || entry.resource !== undefined) {
      throw errors.invalid(`${name} takes parts (${parameter.part.map((p) => p.name).join(', ')}), not a value`, at);
    }
    return decodeEntries(entry.part as Entry[], parameter.part, `${at}.part`, label);
  }
  if (isResourceParameterType(parameter.type)) {
    const resource = entry.resource;
    if (!isRecord(resource) || valueKeys.length > 0) throw errors.invalid(`${name} must be given as a resource (${parameter.type})`, at);
    const concrete = !['Resource', 'DomainResource', 'Any'].includes(parameter.type!);
    if (concrete && resource.resourceType !== parameter.type) {
      throw errors.invalid(`${name} must be a ${parameter.type} resource, not ${String(resource.resourceType)}`, `${at}.resource`);
    }
    return resource as Resource;
  }
  if (entry.resource !== undefined || entry.part !== undefined) {
    throw errors.invalid(`${name} takes a value${parameter.type ? ` of type ${parameter.type}` : ''}, not a resource or parts`, at);
  }
  if (valueKeys.length !== 1) {
    const expected = isOpenType(parameter) ? 'one value[x]' : valueKey(parameter.type!);
    throw errors.invalid(`${name} needs exactly one value: ${expected}`, at);
  }
  const key = valueKeys[0];
  const type = isOpenType(parameter) ? typeOfValueKey(key) : parameter.type!;
  if (key !== valueKey(type)) {
    throw errors.invalid(`${name} must be ${valueKey(type)} (type ${type}), not ${key}`, `${at}.${key}`);
  }
  const problem = checkValue(entry[key], type);
  if (problem) throw errors.invalid(`${name}: ${problem}`, `${at}.${key}`);
  return isOpenType(parameter) ? ({ type, value: entry[key] } satisfies TypedValue) : entry[key];
}

/** valueCode → code, valueCodeableConcept → CodeableConcept. */
export function typeOfValueKey(key: string): string {
  const suffix = key.slice('value'.length);
  const lower = suffix[0]?.toLowerCase() + suffix.slice(1);
  return getPrimitiveType(lower) ? lower : suffix;
}

/** Why `value` is not a valid `type` (primitives checked fully, complex types as objects), or undefined. */
export function checkValue(value: unknown, type: string): string | undefined {
  const primitive = getPrimitiveType(type);
  if (primitive) {
    if (typeof value !== primitive.json) return `expected ${primitive.expected}, got ${JSON.stringify(value)}`;
    // A query string's values are checked only here (a body's strings by the validator too): a
    // NUL passed the uri and code patterns and failed the operation's SQL with a 500.
    const problem = (typeof value === 'string' ? unstorableTextProblem(value) : undefined) ?? primitive.check(value as never);
    return problem ? `${JSON.stringify(value)} is not a valid ${type}: ${problem}` : undefined;
  }
  if (!isRecord(value)) return `expected a ${type} object, got ${JSON.stringify(value)}`;
  return undefined;
}

function unknownParameter(name: string, declared: OperationParameter[], label: string, at: string) {
  return errors.invalid(
    `Unknown parameter "${name}" for ${label}: expected one of ${declared.map((p) => p.name).join(', ') || '(none)'}`,
    at,
  );
}

/** Output that breaks the operation's own definition: a server bug, reported as 500. */
export class OutputError extends Error {}

/**
 * Output encoding: a Parameters resource with the `out` parameters (several values as several
 * entries, parts for nested ones), or the resource itself when the only `out` parameter is a
 * resource-typed `return` (SPEC 2.2). Throws OutputError when the output breaks the definition.
 */
export function encodeOutput(definition: OperationDefinition, output: unknown): Resource {
  const declared = outParameters(definition);
  if (declared.length === 1 && declared[0].name === 'return' && isResourceParameterType(declared[0].type)) {
    const value = isRecord(output) ? output.return : undefined;
    checkResource(value, declared[0], 'return');
    return value as Resource;
  }
  if (!isRecord(output)) throw new OutputError(`the handler returned ${JSON.stringify(output)}, not an object of out parameters`);
  return { resourceType: 'Parameters', parameter: encodeEntries(output, declared, '') };
}

function encodeEntries(values: Record<string, unknown>, declared: OperationParameter[], path: string): Entry[] {
  for (const key of Object.keys(values)) {
    if (values[key] !== undefined && !declared.some((p) => p.name === key)) {
      throw new OutputError(`"${path}${key}" is not an out parameter of the definition`);
    }
  }
  const entries: Entry[] = [];
  for (const parameter of declared) {
    const raw = values[parameter.name];
    const list = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
    const where = `${path}${parameter.name}`;
    if (Array.isArray(raw) && !isRepeating(parameter)) throw new OutputError(`"${where}" has max 1 but several values were returned`);
    if (list.length < parameter.min) throw new OutputError(`required out parameter "${where}" is missing`);
    if (list.length > maxOf(parameter)) throw new OutputError(`"${where}" has max ${parameter.max}, got ${list.length} values`);
    for (const value of list) entries.push(encodeValue(value, parameter, where));
  }
  return entries;
}

function encodeValue(value: unknown, parameter: OperationParameter, where: string): Entry {
  if (parameter.part?.length && !parameter.type) {
    if (!isRecord(value)) throw new OutputError(`"${where}" takes parts, got ${JSON.stringify(value)}`);
    return { name: parameter.name, part: encodeEntries(value, parameter.part, `${where}.`) };
  }
  if (isResourceParameterType(parameter.type)) {
    checkResource(value, parameter, where);
    return { name: parameter.name, resource: value };
  }
  let type: string = parameter.type!;
  let inner = value;
  if (isOpenType(parameter)) {
    if (!isRecord(value) || typeof value.type !== 'string') throw new OutputError(`"${where}" is open-typed: give { type, value }`);
    type = value.type;
    inner = value.value;
  }
  const problem = checkValue(inner, type);
  if (problem) throw new OutputError(`"${where}" (${type}): ${problem}`);
  return { name: parameter.name, [valueKey(type)]: inner };
}

function checkResource(value: unknown, parameter: OperationParameter, where: string): void {
  if (!isRecord(value) || typeof value.resourceType !== 'string') throw new OutputError(`"${where}" must be a resource`);
  const concrete = !['Resource', 'DomainResource', 'Any'].includes(parameter.type!);
  if (concrete && value.resourceType !== parameter.type) {
    throw new OutputError(`"${where}" must be a ${parameter.type}, got a ${value.resourceType}`);
  }
}
