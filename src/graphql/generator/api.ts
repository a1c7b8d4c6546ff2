import { getSearchParametersFor } from '../../fhir/definitions.js';
import type { FhirModel } from './model.js';
import { compare } from './model.js';
import { hyphenToUnderscore, isGraphQLName } from './names.js';
import { block, sdlFile, type SdlArgument, type SdlField } from './sdl.js';

/**
 * schema/fhir-api.graphql: per resource type T, `T(id)`, `TList(...)`, `TConnection(...)` on Query,
 * `TCreate`, `TUpdate`, `TDelete` on Mutation, and the connection types.
 */

/** Arguments every search field has; a search parameter of the same name would be shadowed, so it is left out. */
const PAGING_ARGS: readonly SdlArgument[] = [
  { name: '_params', type: '[SearchParam!]' },
  { name: '_count', type: 'Int' },
  { name: '_offset', type: 'Int' },
  { name: '_sort', type: 'String' },
  { name: '_cursor', type: 'String' },
  { name: '_filter', type: 'String' },
];
const TOTAL_ARG: SdlArgument = { name: '_total', type: 'String' };
const FIXED_ARG_NAMES = new Set([...PAGING_ARGS, TOTAL_ARG].map((arg) => arg.name));

/**
 * One `[String!]` argument per search parameter of the type, named by its code with `-` written `_`:
 * one value, or several for AND; a comma inside a value is OR, as in REST.
 */
export function searchArguments(resourceType: string): SdlArgument[] {
  const names = new Set<string>();
  for (const sp of getSearchParametersFor(resourceType)) {
    const name = hyphenToUnderscore(sp.code);
    if (isGraphQLName(name) && !FIXED_ARG_NAMES.has(name)) names.add(name);
  }
  return [...names].sort(compare).map((name) => ({ name, type: '[String!]' }));
}

export function connectionTypeName(resourceType: string): string {
  return `${resourceType}Connection`;
}

export function connectionEdgeTypeName(resourceType: string): string {
  return `${resourceType}ConnectionEdge`;
}

function queryFields(resourceType: string): SdlField[] {
  const search = [...searchArguments(resourceType), ...PAGING_ARGS];
  return [
    { name: resourceType, args: [{ name: 'id', type: 'ID!' }], type: resourceType, description: `Reads one ${resourceType} by id.` },
    {
      name: `${resourceType}List`,
      args: search,
      type: `[${resourceType}]`,
      description: `Searches ${resourceType} resources (search parameters as in REST, \`-\` written \`_\`).`,
    },
    {
      name: connectionTypeName(resourceType),
      args: [...search, TOTAL_ARG],
      type: connectionTypeName(resourceType),
      description: `Searches ${resourceType} resources, with paging links and the total.`,
    },
  ];
}

function mutationFields(resourceType: string): SdlField[] {
  const input = `${resourceType}Input!`;
  return [
    { name: `${resourceType}Create`, args: [{ name: 'res', type: input }], type: resourceType, description: `Creates a ${resourceType}.` },
    {
      name: `${resourceType}Update`,
      args: [
        { name: 'id', type: 'ID!' },
        { name: 'res', type: input },
        { name: 'ifMatch', type: 'String' },
      ],
      type: resourceType,
      description: `Replaces the ${resourceType} with this id (\`ifMatch\`: the expected version, as an ETag or a version id).`,
    },
    {
      name: `${resourceType}Delete`,
      args: [{ name: 'id', type: 'ID!' }],
      type: 'OperationOutcome',
      description: `Deletes the ${resourceType} with this id.`,
    },
  ];
}

const CONNECTION_FIELDS: readonly SdlField[] = [
  { name: 'count', type: 'Int', description: 'The total number of matches, when known.' },
  { name: 'offset', type: 'Int' },
  { name: 'pageSize', type: 'Int' },
  { name: 'first', type: 'String', description: 'Opaque cursor of the first page: pass it back as `_cursor`.' },
  { name: 'previous', type: 'String', description: 'Opaque cursor of the previous page.' },
  { name: 'next', type: 'String', description: 'Opaque cursor of the next page.' },
  { name: 'last', type: 'String', description: 'Opaque cursor of the last page.' },
];

function connectionTypes(resourceType: string): string[] {
  const edge = connectionEdgeTypeName(resourceType);
  return [
    block(`type ${connectionTypeName(resourceType)}`, [...CONNECTION_FIELDS, { name: 'edges', type: `[${edge}]` }], `A page of ${resourceType} search results.`),
    block(`type ${edge}`, [
      { name: 'mode', type: 'String', description: '`match`, or `include` for an included resource.' },
      { name: 'score', type: 'Float' },
      { name: 'resource', type: resourceType },
    ]),
  ];
}

export function generateApiSdl(model: FhirModel): string {
  const types = model.resourceTypes;
  return sdlFile([
    block('extend type Query', types.flatMap(queryFields)),
    block('extend type Mutation', types.flatMap(mutationFields)),
    ...types.flatMap(connectionTypes),
  ]);
}

/** Type names this file defines, so enums never take them. */
export function apiTypeNames(model: FhirModel): string[] {
  return model.resourceTypes.flatMap((type) => [connectionTypeName(type), connectionEdgeTypeName(type)]);
}
