import type { StructureDefinition } from '../../fhir/definitions.js';
import type { ProfileLibrary } from './library.js';

/** Type profiles inside type profiles inside...: Medplum's limit too. */
const MAX_NESTING = 10;

export interface ExpandedProfile {
  /** The profile with its snapshot. */
  readonly profile: StructureDefinition;
  /** The definitions its elements name as type profiles (extensions, profiled data types), recursively, each once. */
  readonly used: StructureDefinition[];
}

/**
 * A profile and what rendering or validating it needs (`$expand-profile`): undefined when the url
 * is unknown. Throws SnapshotError when a snapshot cannot be generated.
 */
export function expandProfile(library: ProfileLibrary, canonical: string): ExpandedProfile | undefined {
  const sd = library.definition(canonical);
  if (!sd) return undefined;
  const profile = withSnapshot(library, sd);
  const seen = new Set<string>([profile.url]);
  const used: StructureDefinition[] = [];
  let level = [profile];
  for (let depth = 0; depth < MAX_NESTING && level.length > 0; depth++) {
    const next: StructureDefinition[] = [];
    for (const url of level.flatMap(typeProfilesOf)) {
      if (seen.has(url)) continue;
      seen.add(url);
      const found = library.definition(url);
      if (found) next.push(withSnapshot(library, found));
    }
    used.push(...next);
    level = next;
  }
  return { profile, used };
}

function withSnapshot(library: ProfileLibrary, sd: StructureDefinition): StructureDefinition {
  return sd.snapshot?.element.length ? sd : { ...sd, snapshot: { element: library.snapshotOf(sd) } };
}

function typeProfilesOf(sd: StructureDefinition): string[] {
  return (sd.snapshot?.element ?? []).flatMap((element) =>
    (element.type ?? []).flatMap((type) => (type.profile ?? []).filter((url): url is string => typeof url === 'string')),
  );
}
