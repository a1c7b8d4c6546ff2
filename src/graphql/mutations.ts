import type { GraphQLInputObjectType, GraphQLInputType, GraphQLList, GraphQLResolveInfo } from 'graphql';
import { versionOfTag } from '../fhir/etag.js';
import { errors } from '../fhir/outcome.js';
import { type OperationOutcome, type Resource, isRecord } from '../fhir/types.js';
import type { FieldResolver, GraphQLContext } from './context.js';
import { isKind, nullableOf } from './list-fields.js';
import { answerOf, routeAs } from './router-calls.js';

/** The FHIR GraphQL mutations: `TCreate`, `TUpdate`, `TDelete`, each the REST interaction of the same name. */

/** `TCreate(res:)`: the REST create, through the FHIR router (validation, access rules, Binary bytes stored beside the JSON). */
export function createResolver(type: string): FieldResolver {
  return async (_parent: unknown, args: { res: unknown }, context: GraphQLContext, info: GraphQLResolveInfo) => {
    const body = inputResource(type, args.res, info);
    return context.loaders.remember(answerOf(await routeAs(context.requestContext, 'POST', type, body)));
  };
}

/** `TUpdate(id:, res:, ifMatch:)`: the REST update; `ifMatch` is the If-Match header's version. */
export function updateResolver(type: string): FieldResolver {
  return async (_parent: unknown, args: { id: string; res: unknown; ifMatch?: string | null }, context: GraphQLContext, info: GraphQLResolveInfo) => {
    const body = inputResource(type, args.res, info);
    // The id is an argument here; a body without one takes it (a different one is still refused).
    if (body.id === undefined) body.id = args.id;
    const ifMatch = versionOfIfMatchArgument(args.ifMatch);
    const headers: Record<string, string> = ifMatch === undefined ? {} : { 'if-match': `W/"${ifMatch}"` };
    return context.loaders.remember(answerOf(await routeAs(context.requestContext, 'PUT', `${type}/${args.id}`, body, headers)));
  };
}

/** `TDelete(id:)`: the REST delete, answered with an information OperationOutcome. */
export function deleteResolver(type: string): FieldResolver {
  return async (_parent: unknown, args: { id: string }, context: GraphQLContext): Promise<OperationOutcome> => {
    return answerOf(await routeAs(context.requestContext, 'DELETE', `${type}/${args.id}`)) as OperationOutcome;
  };
}

/** A version id, bare or as an ETag (`W/"3"`), as REST's If-Match accepts it. */
function versionOfIfMatchArgument(value: string | null | undefined): string | undefined {
  if (value === null || value === undefined) return undefined;
  const version = versionOfTag(value);
  if (version === undefined) throw errors.invalid(`Malformed ifMatch "${value}": give the version id, e.g. "1" or W/"1"`, 'ifMatch');
  return version;
}

/**
 * The `res` argument as FHIR JSON: enum values already arrive as FHIR codes (the schema maps them);
 * explicit nulls are dropped, since FHIR JSON has no nulls, except inside a repeating primitive and
 * its `_` sibling given together (`given: ["a", null]`, `_given: [null, {...}]`), where FHIR JSON
 * lines the two lists up with nulls (the validator checks they do); JSON-typed values (contained
 * resources) pass unchanged. The resource type is the mutation's, unless the input names another
 * (then validation refuses it, as REST does).
 */
function inputResource(type: string, input: unknown, info: GraphQLResolveInfo): Resource {
  const inputType = info.parentType.getFields()[info.fieldName]?.args.find((arg) => arg.name === 'res')?.type;
  const body = inputType ? withoutNulls(input, inputType) : input;
  return { resourceType: type, ...(isRecord(body) ? body : {}) };
}

function withoutNulls(value: unknown, type: GraphQLInputType, keepNullItems = false): unknown {
  if (value === null || value === undefined) return undefined;
  const nullable = nullableOf(type);
  if (isKind<GraphQLList<GraphQLInputType>>(nullable, 'GraphQLList') && Array.isArray(value)) {
    const items = value.map((item) => withoutNulls(item, nullable.ofType));
    return keepNullItems ? items.map((item) => item ?? null) : items.filter((item) => item !== undefined);
  }
  if (isKind<GraphQLInputObjectType>(nullable, 'GraphQLInputObjectType') && isRecord(value)) {
    const fields = nullable.getFields();
    const out: Record<string, unknown> = {};
    for (const [name, field] of Object.entries(value)) {
      const kept = fields[name] ? withoutNulls(field, fields[name].type, Array.isArray(value[primitivePair(name)])) : field;
      if (kept !== undefined) out[name] = kept;
    }
    return out;
  }
  return value;
}

/** `given` ↔ `_given`: a primitive element and the sibling holding its id and extensions. */
function primitivePair(name: string): string {
  return name.startsWith('_') ? name.slice(1) : `_${name}`;
}
