import { getStructureDefinitions } from '../fhir/definitions.js';
import { isRecord } from '../fhir/types.js';
import { getTypeModel, resolveModel, type TypeModel } from '../validation/model.js';

/**
 * Where a resource holds Coding and CodeableConcept elements bound to a value set, compiled once
 * per resource type (and per set of binding strengths) from the validator's type models into a
 * tree of JSON keys that leads only to bound elements. Finding them in a resource walks the keys
 * the resource has along that tree, so a resource type with no such element costs nothing, and
 * one with some costs a look at the few keys that lead there. Nested resources (`contained`,
 * Bundle entries, Parameters) are searched with their own type's tree. Extensions are not
 * searched: their bindings are their own definitions' (profiles).
 */

export type { BindingStrength } from '../validation/resource-checks.js';
import type { BindingStrength } from '../validation/resource-checks.js';

export interface ElementBinding {
  readonly strength: BindingStrength;
  /** Canonical url of the bound value set, without version. */
  readonly valueSet: string;
  /** `code` (the profile bindings' bare codes), `Coding` or `CodeableConcept`. */
  readonly type: string;
}

/** One bound value found in a resource, with its FHIRPath-like location: `Condition.clinicalStatus`. */
export interface BoundValue {
  readonly value: Record<string, unknown>;
  readonly binding: ElementBinding;
  readonly expression: string;
}

interface Node {
  readonly bound: Map<string, { binding: ElementBinding; isArray: boolean }>;
  readonly children: Map<string, { node: Node; isArray: boolean }>;
  /** Keys holding whole resources, searched with their own type's tree. */
  readonly resources: Set<string>;
}

const CODED = new Set(['Coding', 'CodeableConcept']);

let bindingIndex: Map<string, { strength: string; valueSet: string }> | undefined;

/** Element path (`Condition.clinicalStatus`, `Identifier.type`) → its binding, for coded elements of the base definitions. */
function bindingsByPath(): Map<string, { strength: string; valueSet: string }> {
  if (!bindingIndex) {
    bindingIndex = new Map();
    for (const sd of getStructureDefinitions().values()) {
      for (const element of sd.snapshot?.element ?? []) {
        const { binding } = element;
        if (!binding?.valueSet || !(element.type ?? []).some((t) => CODED.has(t.code))) continue;
        bindingIndex.set(element.path, { strength: binding.strength ?? '', valueSet: binding.valueSet.split('|')[0] });
      }
    }
  }
  return bindingIndex;
}

/** One compiled forest per set of strengths: nodes by model (datatypes shared by every type), roots by resource type. */
class BindingForest {
  private readonly nodes = new Map<TypeModel, Node>();
  private readonly roots = new Map<string, Node | null>();

  constructor(private readonly strengths: ReadonlySet<string>) {}

  root(resourceType: string): Node | undefined {
    let root = this.roots.get(resourceType);
    if (root === undefined) {
      const model = getTypeModel(resourceType);
      root = model?.isResource ? this.compile(model) : null;
      this.prune();
      if (root && !this.relevant(root)) root = null;
      this.roots.set(resourceType, root);
    }
    return root ?? undefined;
  }

  /** The node of a model with every child, cycles included (a type reached again shares its node). */
  private compile(model: TypeModel): Node {
    const known = this.nodes.get(model);
    if (known) return known;
    const node: Node = { bound: new Map(), children: new Map(), resources: new Set() };
    this.nodes.set(model, node);
    for (const [key, slot] of model.slots) {
      const { type, element } = slot;
      if (slot.isPrimitiveExtension || type.primitive || type.code === 'Extension') continue;
      if (type.isResource) {
        node.resources.add(key);
        continue;
      }
      const binding = CODED.has(type.code) ? bindingsByPath().get(element.path) : undefined;
      if (binding && this.strengths.has(binding.strength)) {
        node.bound.set(key, { binding: { strength: binding.strength as BindingStrength, valueSet: binding.valueSet, type: type.code }, isArray: element.isArray });
      }
      const child = resolveModel(type);
      if (child) node.children.set(key, { node: this.compile(child), isArray: element.isArray });
    }
    return node;
  }

  private readonly relevantNodes = new Set<Node>();

  private relevant(node: Node): boolean {
    return this.relevantNodes.has(node);
  }

  /** Drops the children that lead to no bound element and no nested resource (a fixed point, for cycles). */
  private prune(): void {
    for (const node of this.nodes.values()) if (node.bound.size > 0 || node.resources.size > 0) this.relevantNodes.add(node);
    for (let changed = true; changed; ) {
      changed = false;
      for (const node of this.nodes.values()) {
        if (this.relevantNodes.has(node)) continue;
        if ([...node.children.values()].some((child) => this.relevantNodes.has(child.node))) {
          this.relevantNodes.add(node);
          changed = true;
        }
      }
    }
    for (const node of this.nodes.values()) {
      for (const [key, child] of node.children) if (!this.relevantNodes.has(child.node)) node.children.delete(key);
    }
  }
}

const forests = new Map<string, BindingForest>();

function forestOf(strengths: readonly BindingStrength[]): BindingForest {
  const key = strengths.join(',');
  let forest = forests.get(key);
  if (!forest) forests.set(key, (forest = new BindingForest(new Set(strengths))));
  return forest;
}

/** Every Coding and CodeableConcept of `resource` bound with one of `strengths`, nested resources included. */
export function findBoundValues(resource: Record<string, unknown>, strengths: readonly BindingStrength[]): BoundValue[] {
  const forest = forestOf(strengths);
  const found: BoundValue[] = [];
  const visit = (value: Record<string, unknown>, path: string): void => {
    const root = typeof value.resourceType === 'string' ? forest.root(value.resourceType) : undefined;
    if (root) walk(value, root, path, found, visit);
  };
  visit(resource, String(resource.resourceType));
  return found;
}

function walk(
  value: Record<string, unknown>,
  node: Node,
  path: string,
  found: BoundValue[],
  visitResource: (value: Record<string, unknown>, path: string) => void,
): void {
  for (const [key, { binding, isArray }] of node.bound) {
    eachObject(value[key], isArray, `${path}.${key}`, (item, at) => found.push({ value: item, binding, expression: at }));
  }
  for (const [key, { node: child, isArray }] of node.children) {
    eachObject(value[key], isArray, `${path}.${key}`, (item, at) => walk(item, child, at, found, visitResource));
  }
  for (const key of node.resources) eachObject(value[key], Array.isArray(value[key]), `${path}.${key}`, visitResource);
}

function eachObject(value: unknown, isArray: boolean, at: string, use: (item: Record<string, unknown>, at: string) => void): void {
  if (value === undefined) return;
  if (isArray && Array.isArray(value)) {
    value.forEach((item, index) => {
      if (isRecord(item)) use(item, `${at}[${index}]`);
    });
  } else if (isRecord(value)) use(value, at);
}
