import fhirpath from 'fhirpath';
import r4Model from 'fhirpath/fhir-context/r4';
import type {
  ASTVisitor,
  DirectiveNode,
  DocumentNode,
  ExecutionResult,
  FieldNode,
  FragmentDefinitionNode,
  GraphQLError,
  GraphQLFieldResolver,
  GraphQLResolveInfo,
  GraphQLSchema,
  SelectionSetNode,
  ValidationContext,
} from 'graphql';
import { defaultFieldResolver, getNullableType, isListType, isObjectType, Kind } from 'graphql';
import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import { errors, type OperationOutcomeError } from '../fhir/outcome.js';
import { findOperation, fragmentsOf } from './documents.js';
import { outcomeToGraphQLError } from './errors.js';
import { booleanValue, directiveArgument, responsePathKey, stringValue } from './ast-values.js';

/**
 * The FHIR GraphQL directives that reshape results (http://hl7.org/fhir/R4/graphql.html, "Directives";
 * declared in schema/directives.graphql):
 * - `@flatten`: the field's node is dropped and its fields are written into the parent; under a list
 *   field (without @first) every flattened field is a list of the values of all items.
 * - `@first`: only the first item of a list field.
 * - `@singleton`: a single value, not a list, even inside a @flatten; more than one value is an error.
 * - `@slice(path:)`: with @flatten on a list, the flattened names get `.<value of path on the item>`
 *   (`$index`: the item's position).
 * Execution is the standard one; the result is reshaped afterwards from the operation's AST, the way
 * the FHIR reference implementation builds its output (its rules for when a name becomes a list).
 * Queries without these directives are not touched (one cached look at the document).
 */
export function useFhirDirectives(): Plugin {
  return {
    onSchemaChange({ schema }) {
      recordSliceSources(schema);
    },
    onValidate({ addValidationRule }) {
      addValidationRule(FhirDirectivesRule);
    },
    onExecute({ args }) {
      const usage = directiveUsage(args.document);
      if (!usage.shapes) return;
      const sliceKeys = new Map<string, string[]>();
      if (usage.slices) sliceKeysByContext.set(args.contextValue as object, sliceKeys);
      return {
        onExecuteDone({ result, setResult }) {
          if (isAsyncIterable(result) || !result.data) return;
          const operation = findOperation(args.document, args.operationName);
          if (!operation) return;
          const shaper = new ResultShaper(fragmentsOf(args.document), args.variableValues ?? {}, sliceKeys);
          const data = shaper.shape(operation.selectionSet, result.data);
          setResult(withErrors({ ...result, data }, shaper.errors));
        },
      };
    },
  };
}

const SHAPING_DIRECTIVES = new Set(['flatten', 'first', 'singleton', 'slice']);

/** Whether the document's results are reshaped after execution (@flatten, @first, @singleton, @slice). */
export function reshapesResults(document: DocumentNode): boolean {
  return directiveUsage(document).shapes;
}

interface DirectiveUsage {
  /** The document uses at least one of the shaping directives. */
  readonly shapes: boolean;
  /** The document uses @slice with a FHIRPath (its values are read from the resolved items). */
  readonly slices: boolean;
}

const usageByDocument = new WeakMap<DocumentNode, DirectiveUsage>();

/** Which shaping directives a document uses; yoga reuses parsed documents, so this runs once per query text. */
function directiveUsage(document: DocumentNode): DirectiveUsage {
  let usage = usageByDocument.get(document);
  if (!usage) {
    let shapes = false;
    let slices = false;
    walkFields(document, (field) => {
      for (const directive of field.directives ?? []) {
        if (!SHAPING_DIRECTIVES.has(directive.name.value)) continue;
        shapes = true;
        if (directive.name.value === 'slice') slices = true;
      }
    });
    usage = { shapes, slices };
    usageByDocument.set(document, usage);
  }
  return usage;
}

function walkFields(document: DocumentNode, visitField: (field: FieldNode) => void): void {
  const walk = (selectionSet: SelectionSetNode | undefined): void => {
    for (const selection of selectionSet?.selections ?? []) {
      if (selection.kind === Kind.FIELD) visitField(selection);
      if (selection.kind !== Kind.FRAGMENT_SPREAD) walk(selection.selectionSet);
    }
  };
  for (const definition of document.definitions) {
    if (definition.kind === Kind.OPERATION_DEFINITION || definition.kind === Kind.FRAGMENT_DEFINITION) {
      walk(definition.selectionSet);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Validation: the combinations that have no meaning are refused before execution.

function FhirDirectivesRule(context: ValidationContext): ASTVisitor {
  const report = (node: FieldNode, text: string) =>
    context.reportError(
      outcomeToGraphQLError(errors.invalid(text), { nodes: [node], source: undefined, positions: undefined, path: undefined }),
    );
  return {
    Field(node) {
      const names = new Set((node.directives ?? []).map((directive) => directive.name.value));
      const field = node.alias?.value ?? node.name.value;
      if (names.has('flatten') && !node.selectionSet) {
        report(node, `@flatten on "${field}": only a field with a selection of fields can be flattened`);
      }
      if (names.has('slice') && !names.has('flatten')) {
        report(node, `@slice on "${field}" needs @flatten on the same field`);
      }
      if (names.has('slice') && names.has('first')) {
        report(node, `@slice and @first on "${field}" cannot be combined`);
      }
      const path = directiveArgument(node, 'slice', 'path');
      if (path?.kind === Kind.STRING && path.value !== INDEX_PATH) {
        try {
          compiledPath(path.value);
        } catch {
          report(node, `@slice on "${field}": "${path.value}" is not a valid FHIRPath expression`);
        }
      }
    },
  };
}

// ---------------------------------------------------------------------------------------------
// @slice: the path is evaluated on each item as resolved (its FHIR JSON), since the query's selection
// need not include the elements the path reads (`name @slice(path: "use") { given }`).

const INDEX_PATH = '$index';

/** Per execution of a document with @slice: slice keys by response path of the list field. */
const sliceKeysByContext = new WeakMap<object, Map<string, string[]>>();
const wrappedFields = new WeakSet<object>();
const wrappedSchemas = new WeakSet<GraphQLSchema>();

/**
 * Wraps the resolver of every list field once, so that a field carrying @slice records the key of
 * each item it resolved. Other executions pay one WeakMap look-up per list field.
 */
function recordSliceSources(schema: GraphQLSchema): void {
  // Instance-level requests switch schemas per request (src/graphql/instance.ts): each is wrapped once.
  if (wrappedSchemas.has(schema)) return;
  wrappedSchemas.add(schema);
  for (const type of Object.values(schema.getTypeMap())) {
    if (type.name.startsWith('__') || !isObjectType(type)) continue;
    for (const field of Object.values(type.getFields())) {
      if (wrappedFields.has(field) || !isListType(getNullableType(field.type))) continue;
      wrappedFields.add(field);
      field.resolve = sliceRecorder(field.resolve ?? defaultFieldResolver);
    }
  }
}

function sliceRecorder(resolve: GraphQLFieldResolver<unknown, unknown>): GraphQLFieldResolver<unknown, unknown> {
  return (source, args, context, info) => {
    const result = resolve(source, args, context, info);
    const store = sliceKeysByContext.get(context as object);
    if (!store) return result;
    const path = slicePath(info);
    if (path === undefined || path === INDEX_PATH) return result;
    const record = (items: unknown): unknown => {
      if (Array.isArray(items)) store.set(responsePathKey(info.path), items.map((item) => sliceKeyOf(item, path)));
      return items;
    };
    return result instanceof Promise ? result.then(record) : record(result);
  };
}

function slicePath(info: GraphQLResolveInfo): string | undefined {
  for (const node of info.fieldNodes) {
    const value = directiveArgument(node, 'slice', 'path');
    if (value) return stringValue(value, info.variableValues);
  }
  return undefined;
}

/** Compiled slice paths; the paths come from clients, so the cache is bounded (emptied when full). */
const compiledPaths = new Map<string, (item: unknown) => unknown[]>();
const MAX_COMPILED_PATHS = 500;

function compiledPath(path: string): (item: unknown) => unknown[] {
  let compiled = compiledPaths.get(path);
  if (!compiled) {
    const evaluate = fhirpath.compile(path, r4Model);
    if (compiledPaths.size >= MAX_COMPILED_PATHS) compiledPaths.clear();
    compiled = (item) => evaluate(item as object) as unknown[];
    compiledPaths.set(path, compiled);
  }
  return compiled;
}

/** The values of the path on the item, as text (several joined by `,`); empty when it has none. */
function sliceKeyOf(item: unknown, path: string): string {
  if (typeof item !== 'object' || item === null) return '';
  try {
    return compiledPath(path)(item)
      .map((value) => (typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value)))
      .join(',');
  } catch {
    return '';
  }
}

// ---------------------------------------------------------------------------------------------
// Reshaping: a walk of the operation's selections beside the result data.

/** One response key of a selection set: its fields merged, with the directives of any of them. */
interface FieldGroup {
  readonly key: string;
  readonly node: FieldNode;
  readonly selectionSets: SelectionSetNode[];
  flatten: boolean;
  first: boolean;
  singleton: boolean;
  slice: string | undefined;
}

/** How a name collects values: one value, a list, or one value at most (@singleton). */
type SlotKind = 'single' | 'repeating' | 'singleton';

interface Slot {
  kind: SlotKind;
  readonly values: unknown[];
}

type Path = readonly (string | number)[];

/** An item of a resolved list, with its position in the list. */
interface Item {
  readonly value: unknown;
  readonly index: number;
}

class ResultShaper {
  readonly errors: GraphQLError[] = [];
  private readonly groupsBySelections = new Map<string, FieldGroup[]>();

  constructor(
    private readonly fragments: ReadonlyMap<string, FragmentDefinitionNode>,
    private readonly variables: Readonly<Record<string, unknown>>,
    private readonly sliceKeys: ReadonlyMap<string, string[]>,
  ) {}

  shape(selectionSet: SelectionSetNode, data: Record<string, unknown>): Record<string, unknown> {
    return this.object([selectionSet], data, [], []);
  }

  /** A new output object for one input object. */
  private object(
    selectionSets: readonly SelectionSetNode[],
    data: Record<string, unknown>,
    dataPath: Path,
    outPath: Path,
  ): Record<string, unknown> {
    const slots = new Map<string, Slot>();
    this.fill(slots, this.groups(selectionSets), data, dataPath, false, false, '');
    return this.materialize(slots, outPath);
  }

  /**
   * Writes the fields of `data` into `slots`. `flattened`: `data` is the value of a flattened field,
   * whose fields appear only when they have values; `inList`: it is an item of a flattened list, so
   * every name collects a list; `suffix`: the slice suffix of the flattened item.
   */
  private fill(
    slots: Map<string, Slot>,
    groups: readonly FieldGroup[],
    data: Record<string, unknown>,
    dataPath: Path,
    flattened: boolean,
    inList: boolean,
    suffix: string,
  ): void {
    for (const group of groups) {
      const raw = data[group.key];
      // Absent: skipped (@skip/@include) or selected under a fragment of another type.
      if (raw === undefined) continue;
      const fieldPath = [...dataPath, group.key];
      const shaped = group.flatten || group.first || group.singleton || group.slice !== undefined;
      if (!shaped && !flattened) {
        addSlot(slots, group.key, 'single').values.push(this.value(group, raw, fieldPath, fieldPath));
        continue;
      }
      const isList = Array.isArray(raw);
      // Items with their position in the resolved list (the data path, and the slice keys, use it).
      let items: Item[] = raw === null ? [] : isList ? raw.map((value, index) => ({ value, index })) : [{ value: raw, index: 0 }];
      items = items.filter((item) => item.value !== null);
      if (group.first) items = items.slice(0, 1);
      if (group.flatten) {
        // Inside a flattened list, every flattened name stays a list (whatever the number of items).
        this.flatten(slots, group, items, fieldPath, isList, inList || (isList && !group.first), suffix);
        continue;
      }
      const kind: SlotKind = group.singleton ? 'singleton' : (isList && !group.first) || inList ? 'repeating' : 'single';
      if (items.length === 0) {
        // Outside a flattened field an empty field keeps its name, as GraphQL would give it.
        if (!flattened) addSlot(slots, group.key, kind);
        continue;
      }
      const slot = addSlot(slots, group.key + suffix, kind);
      for (const item of items) {
        const itemPath = isList ? [...fieldPath, item.index] : fieldPath;
        slot.values.push(this.value(group, item.value, itemPath, itemPath));
      }
    }
  }

  /**
   * The fields of each item go into the parent's slots. `inList`: a list flattened item by item,
   * so every name collects a list (not after @first).
   */
  private flatten(
    slots: Map<string, Slot>,
    group: FieldGroup,
    items: readonly Item[],
    fieldPath: Path,
    isList: boolean,
    inList: boolean,
    suffix: string,
  ): void {
    const children = this.groups(group.selectionSets);
    const keys = group.slice !== undefined && group.slice !== INDEX_PATH ? this.sliceKeys.get(fieldPath.join('.')) : undefined;
    for (const { value, index } of items) {
      if (typeof value !== 'object' || value === null) continue;
      const sliceKey = group.slice === INDEX_PATH ? String(index) : (keys?.[index] ?? '');
      const itemSuffix = group.slice === undefined ? suffix : `${suffix}.${sliceKey}`;
      const itemPath = isList ? [...fieldPath, index] : fieldPath;
      this.fill(slots, children, value as Record<string, unknown>, itemPath, true, inList, itemSuffix);
    }
  }

  /** A field's value as output: objects and lists of objects reshaped when their selections use directives. */
  private value(group: FieldGroup, value: unknown, dataPath: Path, outPath: Path): unknown {
    if (value === null || typeof value !== 'object' || group.selectionSets.length === 0) return value;
    if (!this.shapesBelow(group)) return value;
    if (Array.isArray(value)) {
      return value.map((item, index) => this.value(group, item, [...dataPath, index], [...outPath, index]));
    }
    return this.object(group.selectionSets, value as Record<string, unknown>, dataPath, outPath);
  }

  private materialize(slots: ReadonlyMap<string, Slot>, outPath: Path): Record<string, unknown> {
    const output: Record<string, unknown> = {};
    for (const [key, slot] of slots) {
      if (slot.kind === 'repeating') output[key] = slot.values;
      else if (slot.values.length <= 1) output[key] = slot.values[0] ?? null;
      else if (slot.kind === 'single') output[key] = slot.values;
      else {
        output[key] = null;
        this.fail(
          errors.invalid(`@singleton on "${key}": the query gives ${slot.values.length} values where one at most is allowed`),
          [...outPath, key],
        );
      }
    }
    return output;
  }

  private fail(error: OperationOutcomeError, path: Path): void {
    this.errors.push(outcomeToGraphQLError(error, { nodes: undefined, source: undefined, positions: undefined, path }));
  }

  /** The fields of selection sets by response key, in first-seen order, through fragments. */
  private groups(selectionSets: readonly SelectionSetNode[]): FieldGroup[] {
    const cacheKey = selectionSets.map((set) => `${set.loc?.start ?? '?'}`).join(',');
    const cached = selectionSets.every((set) => set.loc) ? this.groupsBySelections.get(cacheKey) : undefined;
    if (cached) return cached;
    const groups = new Map<string, FieldGroup>();
    const visiting = new Set<string>();
    const collect = (selectionSet: SelectionSetNode): void => {
      for (const selection of selectionSet.selections) {
        if (!this.included(selection.directives)) continue;
        if (selection.kind === Kind.FIELD) {
          this.addField(groups, selection);
        } else if (selection.kind === Kind.INLINE_FRAGMENT) {
          collect(selection.selectionSet);
        } else if (!visiting.has(selection.name.value)) {
          const fragment = this.fragments.get(selection.name.value);
          if (!fragment) continue;
          visiting.add(selection.name.value);
          collect(fragment.selectionSet);
          visiting.delete(selection.name.value);
        }
      }
    };
    selectionSets.forEach(collect);
    const result = [...groups.values()];
    this.groupsBySelections.set(cacheKey, result);
    return result;
  }

  private addField(groups: Map<string, FieldGroup>, node: FieldNode): void {
    const key = node.alias?.value ?? node.name.value;
    let group = groups.get(key);
    if (!group) {
      group = { key, node, selectionSets: [], flatten: false, first: false, singleton: false, slice: undefined };
      groups.set(key, group);
    }
    if (node.selectionSet) group.selectionSets.push(node.selectionSet);
    for (const directive of node.directives ?? []) {
      const name = directive.name.value;
      if (name === 'flatten') group.flatten = true;
      else if (name === 'first') group.first = true;
      else if (name === 'singleton') group.singleton = true;
      else if (name === 'slice') {
        const path = directiveArgument(node, 'slice', 'path');
        group.slice = path ? stringValue(path, this.variables) : undefined;
      }
    }
  }

  private readonly shapesBelowCache = new WeakMap<FieldGroup, boolean>();

  /** Whether any field below the group carries a shaping directive (otherwise its value is kept as is). */
  private shapesBelow(group: FieldGroup): boolean {
    let known = this.shapesBelowCache.get(group);
    if (known === undefined) {
      known = this.groups(group.selectionSets).some(
        (child) => child.flatten || child.first || child.singleton || child.slice !== undefined || this.shapesBelow(child),
      );
      this.shapesBelowCache.set(group, known);
    }
    return known;
  }

  /** @skip and @include, as execution applied them (so that skipped fields bring no directives). */
  private included(directives: readonly DirectiveNode[] | undefined): boolean {
    for (const directive of directives ?? []) {
      const name = directive.name.value;
      if (name !== 'skip' && name !== 'include') continue;
      const condition = directive.arguments?.find((arg) => arg.name.value === 'if')?.value;
      const value = condition ? booleanValue(condition, this.variables) : undefined;
      if (name === 'skip' && value === true) return false;
      if (name === 'include' && value === false) return false;
    }
    return true;
  }
}

function addSlot(slots: Map<string, Slot>, key: string, kind: SlotKind): Slot {
  const slot = slots.get(key);
  if (!slot) {
    const created: Slot = { kind, values: [] };
    slots.set(key, created);
    return created;
  }
  // A name written again (several flattened items, or a flattened field meeting a field of the
  // parent): it collects a list, unless @singleton says one value at most.
  if (slot.kind !== 'singleton' && kind !== 'singleton') slot.kind = 'repeating';
  else slot.kind = 'singleton';
  return slot;
}

// ---------------------------------------------------------------------------------------------
function withErrors(result: ExecutionResult, extra: readonly GraphQLError[]): ExecutionResult {
  if (extra.length === 0) return result;
  return { ...result, errors: [...(result.errors ?? []), ...extra] };
}
