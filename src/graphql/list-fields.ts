import { isRecord } from '../fhir/types.js';
import fhirpath from 'fhirpath';
import r4Model from 'fhirpath/fhir-context/r4';
import {
  defaultFieldResolver,
  type GraphQLField,
  type GraphQLFieldResolver,
  type GraphQLInputType,
  type GraphQLNonNull,
  type GraphQLObjectType,
  type GraphQLOutputType,
  type GraphQLSchema,
  type GraphQLType,
} from 'graphql';
import { getStructureDefinitions } from '../fhir/definitions.js';
import { errors, OperationOutcomeError } from '../fhir/outcome.js';

/**
 * The arguments of repeating elements (`name(fhirpath: "...", _offset: 1, _count: 2)`,
 * `extension(url: "...")`): applied to the list the field holds, in memory, after the schema is
 * built. A field qualifies when it is a list and its arguments are only these; searches and reverse
 * lists (which also take `_sort` and search arguments) resolve their own `_count` and `_offset`.
 */
const LIST_ARGS = new Set(['fhirpath', '_count', '_offset', 'url']);

type Resolver = GraphQLFieldResolver<unknown, unknown, Record<string, unknown>>;

/** Wraps the resolver of every qualifying list field; returns the same schema. */
export function applyListArguments(schema: GraphQLSchema): GraphQLSchema {
  const paths = fhirPathsByTypeName();
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isKind<GraphQLObjectType>(type, 'GraphQLObjectType') || type.name.startsWith('__')) continue;
    for (const field of Object.values(type.getFields())) {
      if (!takesListArguments(field)) continue;
      const path = paths.get(type.name);
      field.resolve = listResolver(field.resolve ?? defaultFieldResolver, path ? `${path}.${field.name}` : undefined);
    }
  }
  return schema;
}

function takesListArguments(field: GraphQLField<unknown, unknown>): boolean {
  return isKind(nullableOf(field.type), 'GraphQLList') && field.args.length > 0 && field.args.every((arg) => LIST_ARGS.has(arg.name));
}

function listResolver(original: Resolver, elementPath: string | undefined): Resolver {
  return (source, args, context, info) => {
    const value = original(source, args, context, info);
    if (Object.keys(args).length === 0) return value;
    return value instanceof Promise ? value.then((list) => applyArguments(list, args, elementPath)) : applyArguments(value, args, elementPath);
  };
}

/** url, then fhirpath, keep matching items; `_offset` and `_count` slice what is left. */
export function applyArguments(list: unknown, args: Record<string, unknown>, elementPath?: string): unknown {
  if (!Array.isArray(list)) return list;
  let items: unknown[] = list;
  if (typeof args.url === 'string') items = items.filter((item) => isRecord(item) && item.url === args.url);
  if (typeof args.fhirpath === 'string') {
    const test = compiled(args.fhirpath, elementPath);
    items = items.filter((item) => isTrue(evaluate(test, item, args.fhirpath as string)));
  }
  const offset = nonNegative(args._offset, '_offset') ?? 0;
  const count = nonNegative(args._count, '_count');
  return items.slice(offset, count === undefined ? undefined : offset + count);
}

function nonNegative(value: unknown, name: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) throw errors.invalid(`${name} must be a non-negative integer`, name);
  return value;
}

/**
 * FHIRPath truth as `where()` reads it: a single `true`, or a single non-boolean value (singleton
 * evaluation); an empty result, `false` or several values drop the item.
 */
function isTrue(result: unknown[]): boolean {
  return result.length === 1 && (result[0] === true || typeof result[0] !== 'boolean');
}

// Compiled expressions --------------------------------------------------------------------------

type Compiled = (item: unknown) => unknown[];

const MAX_COMPILED = 1000;
/** Compiled once per (element path, expression); cleared when full (clients rarely vary expressions much). */
const cache = new Map<string, Compiled>();

function compiled(expression: string, elementPath: string | undefined): Compiled {
  const key = `${elementPath ?? ''}\u0000${expression}`;
  let fn = cache.get(key);
  if (!fn) {
    try {
      // With the element's path, the R4 model knows its type: choice elements (`value`) resolve.
      const path = elementPath ? { base: elementPath, expression } : expression;
      fn = fhirpath.compile(path as Parameters<typeof fhirpath.compile>[0], r4Model) as unknown as Compiled;
    } catch (error) {
      throw invalidExpression(expression, error);
    }
    if (cache.size >= MAX_COMPILED) cache.clear();
    cache.set(key, fn);
  }
  return fn;
}

function evaluate(fn: Compiled, item: unknown, expression: string): unknown[] {
  try {
    return fn(item);
  } catch (error) {
    throw invalidExpression(expression, error);
  }
}

function invalidExpression(expression: string, error: unknown): OperationOutcomeError {
  const reason = error instanceof Error ? error.message : String(error);
  return errors.invalid(`Invalid fhirpath "${expression}": ${reason}`, 'fhirpath');
}

// GraphQL type names → FHIR element paths ---------------------------------------------------------

/**
 * `Patient` → `Patient`, `HumanName` → `HumanName`, `PatientContact` → `Patient.contact`: the FHIR
 * path of each object type's elements, so an expression on a list item runs with the item's type.
 */
function fhirPathsByTypeName(): Map<string, string> {
  const paths = new Map<string, string>();
  for (const definition of getStructureDefinitions().values()) {
    if (definition.kind !== 'resource' && definition.kind !== 'complex-type') continue;
    for (const element of definition.snapshot?.element ?? []) {
      const code = element.type?.[0]?.code;
      if (element.path.includes('.') && (code === 'BackboneElement' || code === 'Element') && !element.contentReference) {
        const name = element.path.split('.').map((part) => part.charAt(0).toUpperCase() + part.slice(1)).join('');
        if (!paths.has(name)) paths.set(name, element.path);
      }
    }
  }
  // Definitions win over backbone names that happen to spell the same.
  for (const definition of getStructureDefinitions().values()) paths.set(definition.type, definition.type);
  return paths;
}

// Type tests by tag, not instanceof: under vitest, graphql can be loaded twice (ESM and CJS builds),
// and the schema's types may come from the other copy (see errors.ts).

/** Whether a GraphQL type is of a kind (`GraphQLObjectType`, `GraphQLList`, ...), whichever graphql copy made it. */
export function isKind<T extends GraphQLType>(type: unknown, kind: string): type is T {
  return Object.prototype.toString.call(type) === `[object ${kind}]`;
}

/** The type without its non-null wrapper. */
export function nullableOf<T extends GraphQLOutputType | GraphQLInputType>(type: T): T {
  return isKind<GraphQLNonNull<T>>(type, 'GraphQLNonNull') ? (type.ofType as T) : type;
}

