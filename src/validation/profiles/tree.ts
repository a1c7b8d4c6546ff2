import { isResourceType, type ElementDefinition } from '../../fhir/definitions.js';
import type { Invariant } from '../invariants/catalog.js';
import { constraintsOf } from '../invariants/constraints.js';
import { idOf, maxOf, ownerOfId, pathOfId, requiredValueOf } from './elements.js';
import { SnapshotError } from './snapshot.js';
import { addedBinding } from './bindings.js';

/**
 * A snapshot as the profile validator walks it: each element with its children (by name) and,
 * for a sliced element, its slices, each slice with children of its own. Built once per profile.
 */
export interface ProfileNode {
  readonly element: ElementDefinition;
  readonly id: string;
  /** JSON property name, without `[x]` for a choice. */
  readonly name: string;
  readonly isChoice: boolean;
  readonly min: number;
  readonly max: number;
  /** The `fixed[x]` or `pattern[x]` the element states. */
  readonly required: { value: unknown; exact: boolean; key: string } | undefined;
  readonly children: ProfileNode[];
  readonly slices: ProfileNode[];
  /**
   * The constraints the profile walk evaluates on each value of the element: inside slices (only
   * the walk knows which values belong to a slice), and every element's in a data type or
   * extension profile (which the walk applies to a value deep in a resource). The other elements'
   * are evaluated by path from the resource (./invariants.ts).
   */
  invariants: readonly Invariant[];
  /**
   * Whether the element or one below it states a rule the structural check does not already
   * enforce; most elements of a snapshot repeat the base and are not walked.
   */
  constrains: boolean;
  /** Whether the element or one below it states a rule, `$validate`'s warnings (extensible and preferred bindings) included. */
  advises: boolean;
}

export interface CompiledProfile {
  readonly url: string;
  /** The resource or data type it constrains (`Observation`, `Extension`). */
  readonly type: string;
  readonly root: ProfileNode;
  /** The snapshot's elements, in order (what the invariants engine reads constraints from). */
  readonly elements: readonly ElementDefinition[];
}

export function compileProfile(url: string, type: string, elements: readonly ElementDefinition[]): CompiledProfile {
  const nodes = new Map<string, ProfileNode>();
  let root: ProfileNode | undefined;
  for (const element of elements) {
    const node = nodeOf(element);
    nodes.set(node.id, node);
    const owner = ownerOfId(node.id);
    if (!owner) {
      root ??= node;
      continue;
    }
    const parent = nodes.get(owner.id);
    // An element whose parent the snapshot does not list cannot be reached from the root.
    if (!parent) continue;
    (owner.slice ? parent.slices : parent.children).push(node);
  }
  if (!root) throw new SnapshotError(`The snapshot of ${url} does not start with its root element`, 'StructureDefinition.snapshot.element[0]');
  const everyElement = !isResourceType(type);
  for (const node of nodes.values()) node.invariants = walkedInvariants(node, nodes, everyElement);
  markConstraining(root);
  return { url, type, root, elements };
}

function nodeOf(element: ElementDefinition): ProfileNode {
  const last = element.path.slice(element.path.lastIndexOf('.') + 1);
  const isChoice = last.endsWith('[x]');
  return {
    element,
    id: idOf(element),
    name: isChoice ? last.slice(0, -3) : last,
    isChoice,
    min: element.min ?? 0,
    max: maxOf(element),
    required: requiredValueOf(element),
    children: [],
    slices: [],
    invariants: [],
    constrains: true,
    advises: true,
  };
}

function markConstraining(node: ProfileNode): void {
  let below = false;
  let advisedBelow = false;
  for (const child of [...node.children, ...node.slices]) {
    markConstraining(child);
    below ||= child.constrains;
    advisedBelow ||= child.advises;
  }
  node.constrains = below || statesRule(node);
  // Extensible and preferred bindings only warn: a write need not walk to them.
  node.advises = node.constrains || advisedBelow || addedBinding(node.element) !== undefined;
}

/**
 * The constraints the walk evaluates on the element (see ProfileNode.invariants), without those
 * its unsliced element declares too: these are evaluated on every value already, slice members
 * included (bp's component slices repeat vitalsigns' vs-3 of Observation.component).
 */
function walkedInvariants(node: ProfileNode, nodes: ReadonlyMap<string, ProfileNode>, everyElement: boolean): Invariant[] {
  const inSlice = node.id.includes(':');
  if ((!inSlice && !everyElement) || !node.element.constraint?.length) return [];
  const own = constraintsOf(node.element);
  if (!inSlice) return own;
  const unsliced = nodes.get(pathOfId(node.id))?.element;
  const shared = unsliced ? constraintsOf(unsliced) : [];
  return own.filter((invariant) => !shared.some((other) => other.key === invariant.key && other.expression === invariant.expression));
}

/** A rule of the element itself that the structural check (base cardinality, base types) leaves to the profile walk. */
function statesRule(node: ProfileNode): boolean {
  const { element } = node;
  const baseMin = element.base?.min ?? 0;
  const baseMax = element.base?.max === undefined ? Infinity : maxOf({ max: element.base.max });
  return (
    node.min > baseMin ||
    node.max < baseMax ||
    node.required !== undefined ||
    node.invariants.length > 0 ||
    node.slices.length > 0 ||
    node.isChoice ||
    element.binding?.strength === 'required' ||
    node.name === 'extension' ||
    node.name === 'modifierExtension' ||
    (element.type ?? []).some((type) => (type.targetProfile?.length ?? 0) > 0 || (type.profile?.length ?? 0) > 0)
  );
}

/** The child of a node by property name (`value` for `value[x]`). */
export function childNamed(node: ProfileNode, name: string): ProfileNode | undefined {
  return node.children.find((child) => child.name === name);
}
