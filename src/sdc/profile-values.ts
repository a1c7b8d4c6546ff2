import { maxOf } from '../validation/profiles/elements.js';
import type { ProfileNode } from '../validation/profiles/tree.js';
import { matchesPattern } from '../validation/profiles/values.js';
import { isRecord } from '../fhir/types.js';
import type { Json } from './questionnaire.js';

/**
 * The fixed and pattern values of the profile a definitionExtract names, copied into the resource
 * extracted for it (SDC definition-based extraction: a profile's fixed values need no item). An
 * element the answers left out gets its value; a required element (min 1) or a required slice
 * of a list is made when something below it is fixed (bodyweight's category and code codings);
 * elements the answers made are filled in below. What the answers set is never overwritten.
 */
export function copyProfileValues(resource: Json, root: ProfileNode): void {
  fill(resource, root);
}

function fill(obj: Json, node: ProfileNode): void {
  for (const child of node.children) {
    if (!child.constrains) continue;
    const key = keyOf(child);
    if (key === undefined) continue;
    const list = isList(child);
    if (child.required) {
      if (obj[key] === undefined) obj[key] = list ? [structuredClone(child.required.value)] : structuredClone(child.required.value);
      continue;
    }
    if (list) {
      const items = (obj[key] ?? []) as unknown[];
      for (const slice of child.slices) {
        const made = slice.min > 0 ? build(slice) : undefined;
        if (made !== undefined && !items.some((item) => matchesPattern(item, made))) items.push(made);
      }
      const made = items.length === 0 && child.min > 0 ? build(child) : undefined;
      if (made !== undefined) items.push(made);
      if (items.length > 0) obj[key] = items;
    }
    const present = obj[key];
    if (present === undefined && child.min > 0 && !list) {
      const made = build(child);
      if (made !== undefined) obj[key] = made;
    } else if (isRecord(present)) fill(present, child);
    else if (Array.isArray(present) && child.slices.length === 0) for (const item of present) if (isRecord(item)) fill(item, child);
  }
}

/** The value a required element or slice takes from what its profile fixes; undefined when nothing is. */
function build(node: ProfileNode): unknown {
  if (node.required) return structuredClone(node.required.value);
  const made: Json = {};
  fill(made, node);
  const keys = Object.keys(made);
  // An extension of which only the url is known would break ext-1: left to the answers.
  if (keys.length === 0 || (keys.length === 1 && keys[0] === 'url')) return undefined;
  return made;
}

/** The JSON key of an element: a choice's only when its fixed or pattern value names the type. */
function keyOf(node: ProfileNode): string | undefined {
  if (!node.isChoice) return node.name;
  const key = node.required?.key;
  return key ? `${node.name}${key.replace(/^(fixed|pattern)/, '')}` : undefined;
}

function isList(node: ProfileNode): boolean {
  return maxOf({ max: node.element.base?.max ?? node.element.max }) > 1;
}
