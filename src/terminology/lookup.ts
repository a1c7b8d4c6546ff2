import { errors } from '../fhir/outcome.js';
import type { Coding, Resource } from '../fhir/types.js';
import { coreOperationDefinition } from '../operations/definition.js';
import type { Operation, OperationRequest } from '../operations/registry.js';
import { requestCache } from './cache.js';
import { readConcept, readSystemAndConcept } from './concepts.js';
import { type ConceptDetail } from './types.js';
import { designationIn } from './language.js';
import { requireSystem, systemOfResource } from './systems.js';
import { type SystemRef } from './types.js';

interface LookupInput {
  code?: string;
  system?: string;
  version?: string;
  coding?: Coding;
  property?: string[];
  displayLanguage?: string;
}

interface LookupOutput {
  name: string;
  version?: string;
  display: string;
  designation: { language?: string; use?: Coding; value: string }[];
  property: { code: string; value: { type: string; value: unknown }; description?: string }[];
}

const HIERARCHY_DESCRIPTIONS: Record<string, string> = {
  parent: 'The concept immediately above this one in the hierarchy',
  child: 'A concept immediately below this one in the hierarchy',
};

/**
 * CodeSystem/$lookup (SPEC 4.4): `code` + `system` (+ `version`) or `coding`; on an instance only
 * the code. The R4 definition has no instance level; SPEC 4.4 gives it one.
 */
export const lookupOperation: Operation<LookupInput, LookupOutput> = {
  definition: { ...coreOperationDefinition('CodeSystem-lookup'), instance: true },
  async handler(input, request) {
    const code = input.code ?? input.coding?.code;
    if (request.level === 'type') return lookupByUrl(input, request);
    const system = await systemFor(request);
    if (code === undefined) throw errors.invalid('Give the code to look up: code, or coding.code', 'Parameters.parameter');
    const concept = await conceptOf(request, system, code);
    if (!concept) throw errors.notFound(`Code "${code}" not found in code system ${system.url}`);
    return lookupOutput(system, concept, input.property, input.displayLanguage);
  },
};

/** One concept of a system: from memory when the system is held there (cache.ts), else one statement. */
async function conceptOf(request: OperationRequest, system: SystemRef, code: string): Promise<ConceptDetail | undefined> {
  const cache = await requestCache(request.ctx, request.db);
  const loaded = cache && (await cache.system(system.id));
  return loaded ? loaded.byCode.get(code) : readConcept(request.db, system.id, code);
}

/**
 * Type level: from memory when the code system is held there; otherwise system and concept in
 * one statement. A shipped code system is indexed on first use.
 */
async function lookupByUrl(input: LookupInput, request: OperationRequest): Promise<LookupOutput> {
  const url = input.coding?.system ?? input.system;
  const code = input.coding ? input.coding.code : input.code;
  // SPEC 4.4 rule 1: code with system, or coding.
  if (url === undefined || code === undefined) {
    throw errors.invalid('$lookup needs code together with system (optionally version), or coding with system and code', 'Parameters.parameter');
  }
  const version = input.coding?.version ?? input.version;
  if (await requestCache(request.ctx, request.db)) {
    const system = await requireSystem(request.ctx, request.db, url, version);
    const concept = await conceptOf(request, system, code);
    if (!concept) throw errors.notFound(`Code "${code}" not found in code system ${system.url}`);
    return lookupOutput(system, concept, input.property, input.displayLanguage);
  }
  const projectId = request.ctx.identity.projectId;
  let found = await readSystemAndConcept(request.db, projectId, url, version, code);
  if (!found) {
    await requireSystem(request.ctx, request.db, url, version);
    found = await readSystemAndConcept(request.db, projectId, url, version, code);
  }
  if (!found) throw errors.notFound(`Code system ${url} not found`);
  if (!found.concept) throw errors.notFound(`Code "${code}" not found in code system ${found.system.url}`);
  return lookupOutput(found.system, found.concept, input.property, input.displayLanguage);
}

/** Instance level: the system indexed from that CodeSystem resource. */
async function systemFor(request: OperationRequest): Promise<SystemRef> {
  const codeSystem: Resource = await request.ctx.repo.readResource('CodeSystem', request.id!);
  return systemOfResource(request.db, codeSystem, request.ctx);
}

export function lookupOutput(system: SystemRef, concept: ConceptDetail, wanted?: string[], displayLanguage?: string): LookupOutput {
  const descriptions = new Map(system.properties.map((p) => [p.code, p.description]));
  const include = (code: string) => !wanted?.length || wanted.includes(code);
  const property: LookupOutput['property'] = [];
  const add = (code: string, type: string, value: unknown) => {
    if (!include(code)) return;
    const description = descriptions.get(code) ?? HIERARCHY_DESCRIPTIONS[code];
    property.push({ code, value: { type, value }, ...(description ? { description } : {}) });
  };
  for (const p of concept.properties) add(p.property, p.type, fromText(p.type, p.value));
  for (const parent of concept.parents) add('parent', 'code', parent);
  for (const child of concept.children) add('child', 'code', child);
  return {
    name: system.name ?? system.url,
    ...(system.version ? { version: system.version } : {}),
    display: designationIn(displayLanguage, concept.designations) ?? concept.display ?? concept.code,
    designation: include('designation')
      ? concept.designations.map((d) => ({
          ...(d.language ? { language: d.language } : {}),
          ...(d.useCode || d.useSystem
            ? { use: clean({ system: d.useSystem ?? undefined, code: d.useCode ?? undefined, display: d.useDisplay ?? undefined }) }
            : {}),
          value: d.value,
        }))
      : [],
    property,
  };
}

/** Property values are stored as text; this gives back the JSON value of their type. */
function fromText(type: string, text: string): unknown {
  if (type === 'boolean') return text === 'true';
  if (type === 'integer' || type === 'decimal') return Number(text);
  if (/^[A-Z]/.test(type)) return JSON.parse(text) as unknown;
  return text;
}

function clean<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
