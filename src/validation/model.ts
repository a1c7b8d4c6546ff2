import {
  getStructureDefinition,
  type ElementDefinition,
  type StructureDefinition,
} from '../fhir/definitions.js';
import { requiredBindingCodes } from '../fhir/required-bindings.js';
import { getPrimitiveType, type PrimitiveType } from './primitives.js';

/**
 * The compiled form of a StructureDefinition the validator walks: for each type, a map from JSON
 * property name to what may appear there. Compiled once per type, on first use, so start-up does
 * not pay for the hundreds of types a deployment never writes.
 */

export interface TypeRef {
  /** FHIR type code: 'string', 'HumanName', 'Resource', 'BackboneElement'... */
  readonly code: string;
  readonly primitive: PrimitiveType | undefined;
  /** The element holds a whole resource (contained, Bundle.entry.resource): validated by its own resourceType. */
  readonly isResource: boolean;
  /** Inline children (backbone elements, contentReference) or, once resolved, the complex type's model. */
  model: TypeModel | undefined;
}

export interface ElementModel {
  /** Definition path, e.g. 'Patient.contact.name' or 'Observation.value[x]'. */
  readonly path: string;
  /** Property name without the [x] suffix: 'value' for value[x]. */
  readonly name: string;
  readonly min: number;
  readonly max: number;
  readonly isArray: boolean;
  readonly isChoice: boolean;
  readonly types: readonly TypeRef[];
  /** JSON properties any of which makes the element present (valueString, _valueString, ...). */
  readonly keys: readonly string[];
  /** For a `code` element with a required binding that expands finitely: the allowed codes. */
  readonly binding: RequiredCodes | undefined;
}

export interface RequiredCodes {
  /** Canonical url of the bound value set, without version. */
  readonly valueSet: string;
  readonly codes: ReadonlySet<string>;
}

export interface Slot {
  readonly element: ElementModel;
  readonly type: TypeRef;
  /** True for the `_name` sibling that carries a primitive's id and extensions. */
  readonly isPrimitiveExtension: boolean;
}

export interface TypeModel {
  /** Type name, or definition path for backbone elements ('Patient.contact'). */
  readonly name: string;
  readonly isResource: boolean;
  readonly slots: ReadonlyMap<string, Slot>;
  readonly required: readonly ElementModel[];
  readonly choices: readonly ElementModel[];
}

interface MutableTypeModel extends TypeModel {
  readonly slots: Map<string, Slot>;
  readonly required: ElementModel[];
  readonly choices: ElementModel[];
}

const FHIRPATH_SYSTEM_PREFIX = 'http://hl7.org/fhirpath/System.';
const FHIR_TYPE_EXTENSION = 'http://hl7.org/fhir/StructureDefinition/structuredefinition-fhir-type';

const typeModels = new Map<string, TypeModel | null>();

/** The compiled model of a resource or complex type, or undefined when there is no such definition. */
export function getTypeModel(type: string): TypeModel | undefined {
  let model = typeModels.get(type);
  if (model === undefined) {
    const sd = getStructureDefinition(type);
    model = sd?.snapshot && sd.kind !== 'primitive-type' ? compileStructure(sd) : null;
    typeModels.set(type, model);
  }
  return model ?? undefined;
}

/** The model a value of this type is checked against (backbone children or the complex type). */
export function resolveModel(ref: TypeRef): TypeModel | undefined {
  if (ref.model === undefined && !ref.primitive && !ref.isResource) ref.model = getTypeModel(ref.code);
  return ref.model;
}

function compileStructure(sd: StructureDefinition): TypeModel {
  const elements = sd.snapshot?.element ?? [];
  const rootPath = elements[0]?.path ?? sd.type;
  const models = new Map<string, MutableTypeModel>();
  models.set(rootPath, newModel(sd.type, sd.kind === 'resource'));
  // First pass: every path that has children gets a model, so that contentReference can point
  // to any of them, including ones defined later in the snapshot.
  for (const element of elements) {
    const parent = parentPath(element.path);
    if (parent !== undefined && !models.has(parent)) models.set(parent, newModel(parent, false));
  }
  const isResourceRoot = sd.kind === 'resource';
  for (const element of elements) {
    const parent = parentPath(element.path);
    const model = parent === undefined ? undefined : models.get(parent);
    if (!model || element.max === '0') continue;
    const isResourceId = isResourceRoot && parent === rootPath && element.path === `${rootPath}.id`;
    addElement(model, compileElement(element, models, isResourceId));
  }
  return models.get(rootPath) as TypeModel;
}

function newModel(name: string, isResource: boolean): MutableTypeModel {
  return { name, isResource, slots: new Map(), required: [], choices: [] };
}

function parentPath(path: string): string | undefined {
  const dot = path.lastIndexOf('.');
  return dot < 0 ? undefined : path.slice(0, dot);
}

function compileElement(
  element: ElementDefinition,
  models: Map<string, MutableTypeModel>,
  isResourceId: boolean,
): ElementModel {
  const last = element.path.slice(element.path.lastIndexOf('.') + 1);
  const isChoice = last.endsWith('[x]');
  const name = isChoice ? last.slice(0, -3) : last;
  const types = compileTypes(element, models, isResourceId);
  const keys = isChoice ? types.flatMap((type) => choiceKeys(name, type)) : propertyKeys(name, types[0]);
  // Whether JSON uses an array depends on the base definition's cardinality, not a narrowed one.
  const baseMax = (element.base as { max?: string } | undefined)?.max ?? element.max ?? '1';
  return {
    path: element.path,
    name,
    min: element.min ?? 0,
    max: element.max === undefined || element.max === '*' ? Infinity : Number(element.max),
    isArray: baseMax !== '1',
    isChoice,
    types,
    keys,
    binding: compileBinding(element, types),
  };
}

/**
 * Only plain `code` elements: their value is the code itself. Coding and CodeableConcept carry a
 * system, and a value set that does not expand finitely from the definitions is not checked.
 */
function compileBinding(element: ElementDefinition, types: readonly TypeRef[]): RequiredCodes | undefined {
  const { binding } = element;
  if (binding?.strength !== 'required' || !binding.valueSet) return undefined;
  if (types.length !== 1 || types[0]?.code !== 'code') return undefined;
  const codes = requiredBindingCodes(binding.valueSet);
  if (!codes) return undefined;
  const bar = binding.valueSet.indexOf('|');
  return { valueSet: bar < 0 ? binding.valueSet : binding.valueSet.slice(0, bar), codes: new Set(codes) };
}

function compileTypes(
  element: ElementDefinition,
  models: Map<string, MutableTypeModel>,
  isResourceId: boolean,
): TypeRef[] {
  if (element.contentReference) {
    const target = element.contentReference.slice(element.contentReference.indexOf('#') + 1);
    return [typeRef('BackboneElement', models.get(target))];
  }
  const inline = models.get(element.path);
  if (inline) return [typeRef(element.type?.[0]?.code ?? 'BackboneElement', inline)];
  if (isResourceId) return [typeRef('id', undefined)];
  return (element.type ?? []).map((type) => typeRef(typeCode(type), undefined));
}

/** Element.id, Extension.url and the like are typed as FHIRPath system types; the extension names the FHIR type. */
function typeCode(type: NonNullable<ElementDefinition['type']>[number]): string {
  if (!type.code.startsWith(FHIRPATH_SYSTEM_PREFIX)) return type.code;
  const fhirType = (type.extension as { url?: string; valueUrl?: string }[] | undefined)?.find(
    (extension) => extension.url === FHIR_TYPE_EXTENSION,
  )?.valueUrl;
  return fhirType ?? 'string';
}

function typeRef(code: string, model: TypeModel | undefined): TypeRef {
  const primitive = model ? undefined : getPrimitiveType(code);
  return { code, primitive, isResource: code === 'Resource', model };
}

function choiceKeys(name: string, type: TypeRef): string[] {
  return propertyKeys(name + type.code.charAt(0).toUpperCase() + type.code.slice(1), type);
}

function propertyKeys(key: string, type: TypeRef | undefined): string[] {
  return hasExtensionSibling(type) ? [key, `_${key}`] : [key];
}

/** Primitives carry their id and extensions in a `_name` sibling; xhtml cannot have extensions. */
function hasExtensionSibling(type: TypeRef | undefined): boolean {
  return type?.primitive !== undefined && type.code !== 'xhtml';
}

function addElement(model: MutableTypeModel, element: ElementModel): void {
  for (const type of element.types) {
    const key = element.isChoice ? choiceKeys(element.name, type)[0] : element.name;
    model.slots.set(key, { element, type, isPrimitiveExtension: false });
    if (hasExtensionSibling(type)) model.slots.set(`_${key}`, { element, type, isPrimitiveExtension: true });
  }
  if (element.min > 0) model.required.push(element);
  if (element.isChoice) model.choices.push(element);
}
