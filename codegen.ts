import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CodegenConfig } from '@graphql-codegen/cli';
import type { CodegenPlugin } from '@graphql-codegen/plugin-helpers';
import { buildASTSchema, concatAST, getNamedType, isEnumType, isInterfaceType, isObjectType, parse, type GraphQLSchema } from 'graphql';
import * as typescriptFhirJson from './codegen/typescript-fhir-json.js';
import { codeUnionValueNames, withCodeUnions } from './codegen/code-unions.js';
import { codeFields, codeValueSets, enumCodes } from './src/generated/graphql-enum-codes.js';

/**
 * GraphQL code generation: `npm run codegen` writes src/generated/graphql.ts from schema/*.graphql
 * (run `npm run generate:schema` first when the definitions or the generator changed).
 * `scripts/check-generated.sh` (CI) generates into a temporary file (CODEGEN_OUTPUT) and fails when
 * the committed file differs. The output does not depend on where it is written.
 *
 * The object types double as the FHIR JSON types of the REST layer and the services: no
 * `__typename`, absent fields optional but never `null` (FHIR JSON has no nulls), enum values typed
 * as their FHIR codes (`'entered-in-error'`, not `entered_in_error`), fields in FHIR order. The
 * exception, the gaps of the aligned lists of a repeating primitive (`given: [null, 'B'],
 * _given: [{...}, null]`), is typed by `typescript-fhir-json` (codegen/typescript-fhir-json.ts): the
 * typescript plugin with the items of both lists typed `T | null` (`string | null`, `Element | null`).
 */
const output = process.env.CODEGEN_OUTPUT || 'src/generated/graphql.ts';

/**
 * schema/*.graphql in file-name order, as src/graphql/schema.ts builds it, keeping the SDL's own order
 * of types and fields (FHIR element order). Loading the glob instead would either sort every field
 * by name or, unsorted, merge the files in whatever order their reads complete.
 *
 * Coded fields are `String` in the schema (as FHIR GraphQL and Medplum have them); for the TypeScript
 * types only, the output fields with a required binding take the union of its codes
 * (codegen/code-unions.ts): stored FHIR JSON holds valid codes, while inputs and variables stay
 * `string` as the server takes them.
 */
function loadSchema() {
  const dir = 'schema';
  const files = readdirSync(dir).filter((name) => name.endsWith('.graphql')).sort();
  const sdl = concatAST(files.map((name) => parse(readFileSync(join(dir, name), 'utf8'))));
  return buildASTSchema(withCodeUnions(sdl, codeValueSets, codeFields));
}

/** Value name → FHIR code of the schema's enums and of the code unions codegen adds. */
const enumValues: Record<string, Record<string, string>> = { ...enumCodes, ...codeUnionValueNames(codeValueSets) };

/**
 * Plugins of this repository (codegen/), by name. They are TypeScript, which the CLI's own loader
 * (Node's import) cannot load by path; imported here, they are compiled with codegen.ts.
 */
const localPlugins: Record<string, CodegenPlugin> = { 'typescript-fhir-json': typescriptFhirJson };

const exampleOutput = process.env.CODEGEN_EXAMPLE_OUTPUT || 'examples/typed-client/generated.ts';

/**
 * typescript-resolvers `mappers`: every object type of the schema (but the root types) is its own
 * generated type, so a resolver's parent (ResolversParentTypes) and its answer (ResolversTypes) are
 * the very FHIR JSON types the services hold (`ResolversParentTypes['Patient']` is `Patient`).
 *
 * Without them the plugin re-declares, in an `Omit<T, ...> & { ... }` copy of nearly every type (any
 * type that leads to the `Resource` interface, through Extension and Reference), each field leading
 * there, writing the nullable items of its lists `Maybe<T>`; with `maybeValue: 'T'` (the FHIR JSON
 * types' choice, shared by both plugins) those items became non-null. So the parent type of
 * `HumanName` claimed `_given: Element[]` where FHIR JSON, and `HumanName`, hold `(Element | null)[]`,
 * and no stored `Patient` was assignable to `ResolversParentTypes['Patient']`.
 *
 * The enums that are the items of an aligned list (`SearchParameter.base`: ResourceTypes, `dayOfWeek`:
 * DaysOfWeek) are mapped too, so their values take the `resolverTypeWrapperSignature` as objects and
 * scalars do, and such a list may answer its null gaps (the plugin writes an unmapped enum bare).
 */
function selfMappers(schema: GraphQLSchema): Record<string, string> {
  const roots = new Set([schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()].map((type) => type?.name));
  const mappers: Record<string, string> = {};
  for (const type of Object.values(schema.getTypeMap())) {
    if (!type.name.startsWith('__') && !roots.has(type.name) && isObjectType(type)) mappers[type.name] = type.name;
  }
  for (const field of typescriptFhirJson.alignedElementLists(schema)) {
    const [owner, name] = field.split('.');
    const type = schema.getType(owner);
    const item = (isObjectType(type) || isInterfaceType(type)) && getNamedType(type.getFields()[name].type);
    if (isEnumType(item)) mappers[item.name] = item.name;
  }
  return mappers;
}

const schema = loadSchema();

const config: CodegenConfig = {
  schema,
  importExtension: '.js',
  // A local plugin by its name; any other module through Node's import, as the default loader does
  // (the CLI tries `@graphql-codegen/<name>`, then other spellings, while the import finds nothing).
  pluginLoader: (name) => localPlugins[name] ?? import(name),
  generates: {
    [output]: {
      plugins: [
        { add: { content: '// Generated by `npm run codegen` from schema/*.graphql. Do not edit by hand.' } },
        'typescript-fhir-json',
        'typescript-resolvers',
      ],
      config: {
        contextType: '../graphql/context.js#GraphQLContext',
        useTypeImports: true,
        enumsAsTypes: true,
        // The internal value of every enum value is its FHIR code (src/graphql/schema.ts), so the
        // TypeScript types carry codes too; values equal to their code need no entry.
        enumValues,
        skipTypename: true,
        // Output types are FHIR JSON: an absent field is `undefined`, never `null`...
        maybeValue: 'T',
        // ...while arguments and input objects may hold an explicit `null` from the client.
        inputMaybeValue: 'T | null',
        // ...and a resolver may still answer null or undefined for any field and list item: named
        // types through the wrapper, whole lists and enums through the resolver function's result
        // (the plugin's own, `Promise<TResult> | TResult`, refused with `maybeValue: 'T'` an absent
        // list or enum: a `given` resolver could not answer `HumanName['given']`, nor `use` `HumanName['use']`).
        resolverTypeWrapperSignature: 'Promise<T | null | undefined> | T | null | undefined',
        customResolverFn:
          '(parent: TParent, args: TArgs, context: TContext, info: GraphQLResolveInfo) => Promise<TResult | null | undefined> | TResult | null | undefined',
        mappers: selfMappers(schema),
        // `Device.RequestGroupList` and `DeviceRequest.GroupList` would both give `DeviceRequestGroupListArgs`.
        addUnderscoreToArgsType: true,
        // Every custom scalar must be mapped here, so a new one in schema/ cannot silently become `any`.
        strictScalars: true,
        scalars: {
          ID: { input: 'string', output: 'string' },
          JSON: { input: 'unknown', output: 'unknown' },
        },
      },
    },
    // The typed client example: a typed document per operation in examples/typed-client/*.graphql,
    // with the types a client sees on the wire: coded fields as the union of their FHIR codes
    // (`'entered-in-error'`), inputs and variables `string`.
    [exampleOutput]: {
      documents: 'examples/typed-client/*.graphql',
      plugins: [
        { add: { content: '// Generated by `npm run codegen` from examples/typed-client/*.graphql. Do not edit by hand.' } },
        // typescript-operations 6 writes the scalars, enums and input types the documents use itself.
        'typescript-operations',
        'typed-document-node',
      ],
      config: {
        useTypeImports: true,
        enumsAsTypes: true,
        enumValues,
        strictScalars: true,
        scalars: {
          ID: { input: 'string', output: 'string' },
          JSON: { input: 'unknown', output: 'unknown' },
        },
      },
    },
  },
};

export default config;
