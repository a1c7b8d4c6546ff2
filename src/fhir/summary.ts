import { getStructureDefinition } from './definitions.js';
import { errors } from './outcome.js';
import type { Resource } from './types.js';

/** The tag of a resource left incomplete on purpose (`_elements`, `_summary`, secrets an export leaves out). */
export const SUBSETTED = { system: 'http://terminology.hl7.org/CodeSystem/v3-ObservationValue', code: 'SUBSETTED' };
const ALWAYS_KEPT = new Set(['resourceType', 'id', 'meta']);

interface TopLevelElements {
  summary: Set<string>;
  mandatory: Set<string>;
  /** Choice elements by their stem: `deceased` for `deceased[x]`. */
  choices: Set<string>;
}

const elementsByType = new Map<string, TopLevelElements>();

function topLevelElements(resourceType: string): TopLevelElements {
  let entry = elementsByType.get(resourceType);
  if (!entry) {
    entry = { summary: new Set(), mandatory: new Set(), choices: new Set() };
    for (const element of getStructureDefinition(resourceType)?.snapshot?.element ?? []) {
      const parts = element.path.split('.');
      if (parts.length !== 2) continue;
      let name = parts[1];
      if (name.endsWith('[x]')) {
        name = name.slice(0, -3);
        entry.choices.add(name);
      }
      if (element.isSummary === true) entry.summary.add(name);
      if ((element.min ?? 0) > 0) entry.mandatory.add(name);
    }
    elementsByType.set(resourceType, entry);
  }
  return entry;
}

/** The element name as the definition knows it: `deceasedBoolean` → `deceased`. */
function stemOf(key: string, choices: Set<string>): string {
  const match = /^(.*?)[A-Z][A-Za-z]*$/.exec(key);
  if (match && choices.has(match[1])) return match[1];
  return key;
}

export type SummaryMode = 'true' | 'text' | 'data' | 'false' | 'count';

export function parseSummary(value: string | null): SummaryMode | undefined {
  if (value === null) return undefined;
  if (['true', 'text', 'data', 'false', 'count'].includes(value)) return value as SummaryMode;
  throw errors.invalid(`_summary must be true, text, data, count or false, not "${value}"`, '_summary');
}

/** Applies `_summary` and `_elements` (FHIR R4 search 3.1.1.5.8-9); marks a subset SUBSETTED. */
export function applySubsetting(resource: Resource, summary: SummaryMode | undefined, elements: string | null): Resource {
  if (elements !== null && elements !== '') return keepElements(resource, parseElements(elements, resource.resourceType));
  if (!summary || summary === 'false' || summary === 'count') return resource;
  const info = topLevelElements(resource.resourceType);
  const keep = (key: string): boolean => {
    const stem = stemOf(key, info.choices);
    if (summary === 'true') return info.summary.has(stem) || info.mandatory.has(stem);
    if (summary === 'text') return key === 'text' || info.mandatory.has(stem);
    return key !== 'text';
  };
  return subset(resource, keep);
}

function parseElements(value: string, resourceType: string): Set<string> {
  return new Set(
    value
      .split(',')
      .map((name) => name.trim())
      .filter((name) => name.length > 0)
      .map((name) => (name.startsWith(`${resourceType}.`) ? name.slice(resourceType.length + 1) : name)),
  );
}

function keepElements(resource: Resource, names: Set<string>): Resource {
  const info = topLevelElements(resource.resourceType);
  return subset(resource, (key) => {
    const stem = stemOf(key, info.choices);
    return names.has(key) || names.has(stem) || info.mandatory.has(stem);
  });
}

function subset(resource: Resource, keep: (key: string) => boolean): Resource {
  const result: Resource = { resourceType: resource.resourceType };
  for (const [key, value] of Object.entries(resource)) {
    if (ALWAYS_KEPT.has(key) || keep(key) || (key.startsWith('_') && keep(key.slice(1)))) result[key] = value;
  }
  const meta = { ...(resource.meta ?? {}) };
  meta.tag = [...(meta.tag ?? []).filter((t) => t.code !== SUBSETTED.code), SUBSETTED];
  result.meta = meta;
  return result;
}
