import {
  getResourceTypes,
  getStructureDefinitions,
  type ElementDefinition,
  type StructureDefinition,
} from '../../fhir/definitions.js';
import { backboneTypeName, upperFirst } from './names.js';

/**
 * The FHIR definitions reduced to what the SDL needs: object types (resources, data types, backbone
 * elements) and their fields, with GraphQL type names. Every other generator module reads this model,
 * never the StructureDefinitions themselves.
 */

export type ObjectKind = 'resource' | 'datatype' | 'backbone';
export type ScalarName = 'String' | 'Int' | 'Float' | 'Boolean' | 'ID';

export interface FieldModel {
  /** The FHIR JSON property name (a choice element gives one field per type: `valueQuantity`). */
  name: string;
  /** The element's path, e.g. `Patient.gender`, `Observation.value[x]`. */
  path: string;
  description?: string;
  /** Repeating element (max != "1"): a list type with list arguments on the output type. */
  list: boolean;
  /** `scalar` and `object` name their GraphQL type in `type`; `resource` is any resource (contained, ...). */
  kind: 'scalar' | 'object' | 'resource';
  type: string;
  /** The value set of a `code` element with a required binding (may become an enum, see enums.ts). */
  requiredValueSet?: string;
  /**
   * A FHIR primitive element, which FHIR JSON may follow with a `_name` sibling holding its id and
   * extensions (not xhtml, not an element's own `id` or `Extension.url`: those are attributes in XML).
   */
  primitive?: boolean;
  /**
   * The `_name` sibling of the primitive element `name` (`_birthDate`, `_given`): kind `object`, type
   * `Element`, a list for a repeating element (aligned by index with it, nulls filling the gaps).
   */
  primitiveExtension?: boolean;
}

export interface ObjectModel {
  /** The GraphQL type name: the resource or data type name, or the PascalCase backbone path. */
  name: string;
  kind: ObjectKind;
  /** The element path the type describes (`Patient`, `Patient.contact`). */
  path: string;
  description?: string;
  fields: FieldModel[];
}

export interface FhirModel {
  /** Concrete resource types (R4 and admin), sorted. */
  resourceTypes: readonly string[];
  /** Every object type, sorted by name. */
  objects: readonly ObjectModel[];
}

const FHIRPATH_SYSTEM = 'http://hl7.org/fhirpath/System.';

/** FHIR primitive (and FHIRPath system) types → GraphQL scalars; anything not listed is a String. */
const PRIMITIVE_SCALARS: Record<string, ScalarName> = {
  boolean: 'Boolean',
  integer: 'Int',
  positiveInt: 'Int',
  unsignedInt: 'Int',
  decimal: 'Float',
  Boolean: 'Boolean',
  Integer: 'Int',
  Decimal: 'Float',
};

/**
 * The object type of a primitive's `_name` sibling: FHIR's abstract `Element` (`id`, `extension`),
 * the one abstract definition that becomes an object type.
 */
export const PRIMITIVE_ELEMENT_TYPE = 'Element';
const ELEMENT_DESCRIPTION =
  "A primitive element's id and extensions, which FHIR JSON writes in its `_` sibling: `_birthDate` for `birthDate`; " +
  'for a repeating element (`_given`), a list whose items line up with the values, null where a value has none.';

/** Element types whose value is a whole resource: the `Resource` interface (output) or JSON (input). */
const RESOURCE_ELEMENT_TYPES = new Set(['Resource', 'DomainResource']);
/** Element types that introduce a backbone element when the element has children. */
const BACKBONE_ELEMENT_TYPES = new Set(['BackboneElement', 'Element']);

export function buildModel(): FhirModel {
  const definitions = getStructureDefinitions();
  const objects: ObjectModel[] = [];
  for (const sd of [...definitions.values()].sort((a, b) => compare(a.type, b.type))) {
    const kind = topLevelKind(sd);
    if (kind) objects.push(...new TypeWalker(sd, kind, definitions).walk());
  }
  const element = objects.find((object) => object.name === PRIMITIVE_ELEMENT_TYPE);
  if (element) element.description = ELEMENT_DESCRIPTION;
  renameClashingBackbones(objects);
  objects.sort((a, b) => compare(a.name, b.name));
  assertUniqueNames(objects);
  return { resourceTypes: getResourceTypes(), objects };
}

/**
 * Concrete resources and complex data types, and `Element` (the type of primitive extensions); other
 * abstract, primitive and logical definitions are not object types.
 */
function topLevelKind(sd: StructureDefinition): ObjectKind | undefined {
  if (sd.type === PRIMITIVE_ELEMENT_TYPE && sd.kind === 'complex-type') return 'datatype';
  if (sd.abstract) return undefined;
  if (sd.kind === 'resource') return 'resource';
  if (sd.kind === 'complex-type') return 'datatype';
  return undefined;
}

/** Walks one StructureDefinition's snapshot: its own object type and one per backbone element. */
class TypeWalker {
  private readonly children = new Map<string, ElementDefinition[]>();
  private readonly objects: ObjectModel[] = [];

  constructor(
    private readonly sd: StructureDefinition,
    private readonly kind: ObjectKind,
    private readonly definitions: Map<string, StructureDefinition>,
  ) {
    const seen = new Set<string>();
    for (const element of sd.snapshot?.element ?? []) {
      // Slices repeat a path; the base element (first) describes the JSON property.
      if (seen.has(element.path)) continue;
      seen.add(element.path);
      const dot = element.path.lastIndexOf('.');
      if (dot < 0) continue;
      const parent = element.path.slice(0, dot);
      let list = this.children.get(parent);
      if (!list) this.children.set(parent, (list = []));
      list.push(element);
    }
  }

  walk(): ObjectModel[] {
    const root = this.sd.snapshot?.element?.[0];
    this.addObject(this.sd.type, this.sd.type, this.kind, typeof root?.short === 'string' ? root.short : undefined);
    return this.objects;
  }

  private addObject(name: string, path: string, kind: ObjectKind, text: string | undefined): void {
    const object: ObjectModel = { name, kind, path, description: text, fields: [] };
    this.objects.push(object);
    for (const element of this.children.get(path) ?? []) {
      if (element.max === '0') continue;
      for (const field of this.fieldsOf(element)) {
        object.fields.push(field);
        if (field.primitive) object.fields.push(extensionSibling(field));
      }
    }
  }

  private fieldsOf(element: ElementDefinition): FieldModel[] {
    const property = element.path.slice(element.path.lastIndexOf('.') + 1);
    const base = {
      path: element.path,
      description: typeof element.short === 'string' ? element.short : undefined,
      list: element.max !== '1',
    };
    if (element.contentReference) {
      // `#Questionnaire.item`: the same backbone type as the element referred to.
      const target = element.contentReference.slice(element.contentReference.indexOf('#') + 1);
      return [{ ...base, name: property, kind: 'object', type: backboneTypeName(target) }];
    }
    const types = element.type ?? [];
    if (types.length === 1 && BACKBONE_ELEMENT_TYPES.has(types[0].code) && this.children.has(element.path)) {
      const name = backboneTypeName(element.path);
      this.addObject(name, element.path, 'backbone', base.description);
      return [{ ...base, name: property, kind: 'object', type: name }];
    }
    if (property.endsWith('[x]')) {
      const stem = property.slice(0, -3);
      return types.map((type) => ({ ...base, name: stem + upperFirst(type.code), ...this.typeOf(element, type.code) }));
    }
    if (types.length !== 1) throw new Error(`generate-schema: ${element.path} has ${types.length} types and is no choice`);
    return [{ ...base, name: property, ...this.typeOf(element, types[0].code) }];
  }

  private typeOf(element: ElementDefinition, code: string): Pick<FieldModel, 'kind' | 'type' | 'requiredValueSet' | 'primitive'> {
    if (RESOURCE_ELEMENT_TYPES.has(code)) return { kind: 'resource', type: 'Resource' };
    // The logical id of a resource (not the `id` of an element inside it): an `id` primitive.
    if (this.kind === 'resource' && element.path === `${this.sd.type}.id`) return { kind: 'scalar', type: 'ID', primitive: true };
    const systemName = code.startsWith(FHIRPATH_SYSTEM) ? code.slice(FHIRPATH_SYSTEM.length) : undefined;
    const definition = systemName === undefined ? this.definitions.get(code) : undefined;
    if (systemName !== undefined || definition?.kind === 'primitive-type' || code === 'integer64') {
      const scalar = PRIMITIVE_SCALARS[systemName ?? code] ?? 'String';
      const binding = element.binding;
      const requiredValueSet =
        code === 'code' && binding?.strength === 'required' && binding.valueSet ? binding.valueSet : undefined;
      // FHIRPath system types are an element's `id` and `Extension.url` (XML attributes): no `_name`.
      const primitive = systemName === undefined && code !== 'xhtml';
      return {
        kind: 'scalar',
        type: scalar,
        ...(requiredValueSet ? { requiredValueSet } : {}),
        ...(primitive ? { primitive } : {}),
      };
    }
    // A data type, or a concrete resource type named as the element's type (AsyncJob.output: Parameters).
    if ((definition?.kind === 'complex-type' || definition?.kind === 'resource') && !definition.abstract) {
      return { kind: 'object', type: code };
    }
    throw new Error(`generate-schema: ${element.path} has type ${code}, which has no GraphQL mapping`);
  }
}

/** `birthDate` → `_birthDate: Element`; `given` (repeating) → `_given: [Element]`. */
function extensionSibling(field: FieldModel): FieldModel {
  return { name: `_${field.name}`, path: field.path, list: field.list, kind: 'object', type: PRIMITIVE_ELEMENT_TYPE, primitiveExtension: true };
}

/** Suffixes of the names other generated types take: `<Name>Input` (inputs.ts), `<Resource>Connection` (api.ts), ... */
export const DERIVED_TYPE_SUFFIXES = ['Input', 'Connection', 'ConnectionEdge', 'ReferenceParam'];

/**
 * A backbone whose PascalCase path equals a derived name of another type (`Task.input` →
 * `TaskInput`, the input type of Task) gets `Element` appended: `TaskInputElement`. The input type
 * keeps the convention clients use most (`TaskCreate(res: TaskInput!)`).
 */
function renameClashingBackbones(objects: ObjectModel[]): void {
  const derived = new Set(objects.flatMap((object) => DERIVED_TYPE_SUFFIXES.map((suffix) => object.name + suffix)));
  const renamed = new Map<string, string>();
  for (const object of objects) {
    if (object.kind !== 'backbone' || !derived.has(object.name)) continue;
    renamed.set(object.name, `${object.name}Element`);
    object.name = `${object.name}Element`;
  }
  for (const object of objects) {
    for (const field of object.fields) if (field.kind === 'object') field.type = renamed.get(field.type) ?? field.type;
  }
}

function assertUniqueNames(objects: readonly ObjectModel[]): void {
  const seen = new Map<string, string>();
  for (const object of objects) {
    const other = seen.get(object.name);
    if (other !== undefined) throw new Error(`generate-schema: ${object.path} and ${other} both map to type ${object.name}`);
    seen.set(object.name, object.path);
  }
}

/** Code-unit order, independent of the machine's locale. */
export function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
