import { plugin as typescriptPlugin } from '@graphql-codegen/typescript';
import { buildSchema as buildSdl } from 'graphql';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { alignedElementLists, plugin } from '../../codegen/typescript-fhir-json.js';
import type { GraphQLResolveInfo } from 'graphql';
import type {
  Element,
  ElementInput,
  HumanName,
  HumanNameInput,
  HumanNameResolvers,
  Patient,
  ResolversParentTypes,
  ResolversTypes,
  ResourceTypes,
  SearchParameter,
  SearchParameterResolvers,
} from '../../src/generated/graphql.js';
import type { GraphQLContext } from '../../src/graphql/context.js';
import { buildSchema } from '../../src/graphql/schema.js';

// The generated TypeScript types (src/generated/graphql.ts) against FHIR JSON's one kind of null: the
// gaps of the two aligned lists of a repeating primitive, its values and its primitive extensions
// (`"given": [null, "B"], "_given": [{...}, null]`). The assignments and expectTypeOf lines are
// checked by the compiler (`npx tsc --noEmit -p .`).

const NICKNAME = 'http://example.org/nickname';

describe('generated types: aligned primitive-extension lists', () => {
  it('type the items of `_given` as Element | null, as FHIR JSON writes them', () => {
    const name: HumanName = { given: ['A', 'B'], _given: [null, { extension: [{ url: NICKNAME, valueBoolean: true }] }] };
    const patient: Patient = { resourceType: 'Patient', name: [name], address: [{ line: ['1 Main St', 'Flat 2'], _line: [{ id: 'l1' }, null] }] };
    const input: HumanNameInput = { given: ['A', 'B'], _given: [null, { id: 'g2' }] };
    expectTypeOf<NonNullable<HumanName['_given']>[number]>().toEqualTypeOf<Element | null>();
    expectTypeOf<NonNullable<HumanName['_prefix']>[number]>().toEqualTypeOf<Element | null>();
    expectTypeOf<NonNullable<HumanNameInput['_given']>[number]>().toEqualTypeOf<ElementInput | null>();
    // A code reading the list has to handle the gaps.
    const nicknames = (patient.name ?? []).flatMap((n) => (n._given ?? []).map((element) => element?.extension?.[0]?.valueBoolean ?? null));
    expect(nicknames).toEqual([null, true]);
    expect(patient.address?.[0]._line?.[1]).toBeNull();
    expect(input._given?.[0]).toBeNull();
  });

  it('type the items of `given` as string | null: a value left out beside its extensions', () => {
    const name: HumanName = { given: [null, 'B'], _given: [{ extension: [{ url: NICKNAME, valueBoolean: true }] }, null] };
    const patient: Patient = { resourceType: 'Patient', name: [name], address: [{ line: [null, 'Flat 2'], _line: [{ id: 'l1' }, null] }] };
    const input: HumanNameInput = { given: [null, 'B'], _given: [{ id: 'g1' }, null] };
    expectTypeOf<NonNullable<HumanName['given']>[number]>().toEqualTypeOf<string | null>();
    expectTypeOf<HumanName['given']>().toEqualTypeOf<(string | null)[] | undefined>();
    expectTypeOf<NonNullable<HumanName['prefix']>[number]>().toEqualTypeOf<string | null>();
    expectTypeOf<NonNullable<HumanNameInput['given']>[number]>().toEqualTypeOf<string | null>();
    // An enum list too: SearchParameter.base, beside `_base`.
    expectTypeOf<NonNullable<SearchParameter['base']>[number]>().toEqualTypeOf<ResourceTypes | null>();
    // A code reading the values has to handle the gaps.
    const given = (patient.name ?? []).flatMap((n) => (n.given ?? []).filter((value) => value !== null).map((value) => value.toUpperCase()));
    expect(given).toEqual(['B']);
    expect(patient.address?.[0].line?.[0]).toBeNull();
    expect(input.given?.[0]).toBeNull();
  });

  it('keep every other field as it was: absent is undefined, never null', () => {
    expectTypeOf<HumanName['_family']>().toEqualTypeOf<Element | undefined>();
    expectTypeOf<HumanName['family']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<Patient['_birthDate']>().toEqualTypeOf<Element | undefined>();
    expectTypeOf<NonNullable<Element['extension']>[number]>().not.toBeNullable();
    // @ts-expect-error a single primitive's sibling is an Element or absent, not null
    const single: HumanName = { family: 'Chalmers', _family: null };
    // @ts-expect-error other lists have no gaps
    const extensions: Element = { extension: [null] };
    // @ts-expect-error a single primitive is a value or absent, not null
    const family: HumanName = { family: null, _family: { id: 'f' } };
    expect([single._family, extensions.extension, family.family]).toEqual([null, [null], null]);
  });
});

describe('codegen plugin typescript-fhir-json', () => {
  const sdl = /* GraphQL */ `
    type Query { name: HumanName }
    type Element { id: String, extension: [Extension] }
    type Extension { url: String, valueString: String }
    interface Named { given: [String], _given: [Element] }
    type HumanName implements Named {
      extension: [Extension]
      family: String
      _family: Element
      given: [String]
      _given: [Element]
      prefix: [String]
      _prefix: [Element!]
      suffix: [String]
      _suffix: [Element]!
      alias: [String!]
      _alias: [Element]
    }
    input ElementInput { id: String }
    input HumanNameInput { given: [String], _given: [ElementInput] }
  `;
  const config = { maybeValue: 'T', inputMaybeValue: 'T | null', skipTypename: true };

  /** The plugin's output as trimmed lines. */
  async function lines(run: typeof plugin, schemaSdl: string): Promise<string[]> {
    const output = await run(buildSdl(schemaSdl), [], config, { outputFile: 'graphql.ts' });
    const text = typeof output === 'string' ? output : [...(output.prepend ?? []), output.content].join('\n');
    return text.split('\n').map((line) => line.trim());
  }

  it('differs from the typescript plugin only on the items of the aligned lists whose items may be null', async () => {
    const ours = await lines(plugin, sdl);
    const stock = await lines(typescriptPlugin, sdl);
    expect(ours.length).toBe(stock.length);
    const changed = ours.flatMap((line, index) => (line === stock[index] ? [] : [[stock[index], line]]));
    const given = ["given?: Maybe<Array<Maybe<Scalars['String']['output']>>>;", "given?: Maybe<Array<Scalars['String']['output'] | null>>;"];
    expect(changed).toEqual([
      // Named.given and _given, then HumanName's: each list of a pair is judged by its own item type,
      // so `prefix` changes beside a `_prefix` of non-null items, `_alias` beside an `alias` of non-null
      // items, and `_suffix` (a non-null list of nullable items) keeps its list non-null.
      given,
      ['_given?: Maybe<Array<Maybe<Element>>>;', '_given?: Maybe<Array<Element | null>>;'],
      given,
      ['_given?: Maybe<Array<Maybe<Element>>>;', '_given?: Maybe<Array<Element | null>>;'],
      ["prefix?: Maybe<Array<Maybe<Scalars['String']['output']>>>;", "prefix?: Maybe<Array<Scalars['String']['output'] | null>>;"],
      ["suffix?: Maybe<Array<Maybe<Scalars['String']['output']>>>;", "suffix?: Maybe<Array<Scalars['String']['output'] | null>>;"],
      ['_suffix: Array<Maybe<Element>>;', '_suffix: Array<Element | null>;'],
      ['_alias?: Maybe<Array<Maybe<Element>>>;', '_alias?: Maybe<Array<Element | null>>;'],
    ]);
    // Non-null items, single primitives and siblings, other lists and the input types keep the typescript plugin's types.
    expect(ours).toEqual(
      expect.arrayContaining([
        "alias?: Maybe<Array<Scalars['String']['output']>>;",
        "family?: Maybe<Scalars['String']['output']>;",
        '_prefix?: Maybe<Array<Element>>;',
        '_family?: Maybe<Element>;',
        'extension?: Maybe<Array<Maybe<Extension>>>;',
        '_given?: InputMaybe<Array<InputMaybe<ElementInput>>>;',
        "given?: InputMaybe<Array<InputMaybe<Scalars['String']['input']>>>;",
      ]),
    );
  });

  it('refuses a list of Element that is not the `_` sibling of a repeating primitive', async () => {
    const orphan = 'type Query { x: T } type Element { id: String } type T { family: String, _family: [Element] }';
    await expect(async () => lines(plugin, orphan)).rejects.toThrow('T._family is a list of Element but not the `_` sibling of a repeating primitive');
  });

  it('finds the aligned lists of the server schema', () => {
    const aligned = alignedElementLists(buildSchema());
    expect([...aligned]).toEqual(
      expect.arrayContaining(['HumanName._given', 'HumanName.given', 'HumanName._prefix', 'HumanName.prefix', 'Address._line', 'Address.line', 'SearchParameter.base']),
    );
    expect(aligned.has('Patient._birthDate')).toBe(false);
    expect(aligned.has('Patient.birthDate')).toBe(false);
    expect(aligned.has('HumanName.family')).toBe(false);
    expect(aligned.has('HumanName.extension')).toBe(false);
    expect(aligned.has('HumanName._family')).toBe(false);
  });
});

describe('generated resolver types: the FHIR JSON types', () => {
  // typescript-resolvers' own parent types re-declared the fields leading to the Resource interface
  // with `Maybe<T>` list items, non-null under `maybeValue: 'T'`: `_given: Element[]` beside
  // HumanName's `(Element | null)[]`. codegen.ts maps every object type to itself instead.
  it('give a resolver the FHIR JSON type itself as its parent, gaps of the aligned lists included', () => {
    expectTypeOf<ResolversParentTypes['HumanName']>().toEqualTypeOf<HumanName>();
    expectTypeOf<ResolversParentTypes['Patient']>().toEqualTypeOf<Patient>();
    expectTypeOf<NonNullable<ResolversParentTypes['HumanName']['_given']>[number]>().toEqualTypeOf<Element | null>();
    expectTypeOf<NonNullable<ResolversParentTypes['Patient']['name']>[number]>().toEqualTypeOf<HumanName>();
    // A stored resource is a parent where the schema has the Resource interface (contained, Reference.resource).
    const patient: Patient = { resourceType: 'Patient', name: [{ given: [null, 'B'], _given: [{ id: 'g1' }, null] }] };
    const parent: ResolversParentTypes['Resource'] = patient;
    // @ts-expect-error the parent type still checks its fields: `given` holds strings
    const wrong: ResolversParentTypes['HumanName'] = { given: [1] };
    expect([parent.id, wrong.given]).toEqual([undefined, [1]]);
  });

  it('let a field resolver answer what the FHIR JSON holds: an absent list or enum, the null gaps of a list', async () => {
    // Each returns its parent's field as it is; before, `given` and `use` could not answer undefined,
    // nor `base` (an enum list) its null gaps.
    const resolvers: HumanNameResolvers = {
      given: (parent) => parent.given,
      _given: (parent) => parent._given,
      use: (parent) => parent.use,
    };
    const searchParameter: SearchParameterResolvers = { base: (parent) => parent.base };
    expectTypeOf<ResolversTypes['HumanName']>().toEqualTypeOf<Promise<HumanName | null | undefined> | HumanName | null | undefined>();
    const call = async (resolver: unknown, parent: unknown) =>
      (resolver as (parent: unknown, args: object, context: GraphQLContext, info: GraphQLResolveInfo) => unknown)(parent, {}, {} as GraphQLContext, {} as GraphQLResolveInfo);
    const name: HumanName = { given: [null, 'B'], _given: [{ id: 'g1' }, null] };
    expect(await call(resolvers.given, name)).toEqual([null, 'B']);
    expect(await call(resolvers._given, name)).toEqual([{ id: 'g1' }, null]);
    expect(await call(resolvers.use, name)).toBeUndefined();
    const base: SearchParameter['base'] = ['Patient', null];
    expect(await call(searchParameter.base, { resourceType: 'SearchParameter', base })).toEqual(['Patient', null]);
    // @ts-expect-error an answer of the wrong type is still refused
    const wrong: HumanNameResolvers = { given: () => [1] };
    expect(wrong.given).toBeTypeOf('function');
  });
});
