import { randomUUID } from 'node:crypto';
import { SERVER_NAME, SERVER_VERSION } from '../fhir/software.js';
import { isRecord, type Bundle, type BundleEntry, type Resource } from '../fhir/types.js';
import { narrativeDiv } from './narrative.js';
import { LOINC, SECTIONS, sectionOf, type Lookup, type SectionSpec } from './sections.js';

/**
 * Assembles an IPS document Bundle (IPS 1.1.0 Bundle-uv-ips): the Composition first, then the
 * patient, the author and every resource the sections and their entries reference, each once.
 * Stored resources keep their ids and get their absolute URL as `fullUrl`; what the summary makes
 * up (the Composition, "no information" entries, a Device standing for the server) gets a
 * `urn:uuid` and is referenced by it.
 */

export interface SummaryParts {
  readonly patient: Resource;
  /** The caller's profile when it may author a Composition; otherwise the server's Device is made up. */
  readonly author: Resource | undefined;
  /** The patient's resources of the summary's types. */
  readonly records: readonly Resource[];
  /** What they reference, keyed `Type/id`. */
  readonly referenced: ReadonlyMap<string, Resource>;
  readonly fhirBase: string;
}

interface DocumentEntry {
  fullUrl: string;
  resource: Resource;
}

export function buildSummaryDocument(parts: SummaryParts): Bundle {
  const now = new Date().toISOString();
  const stored = new Map<string, DocumentEntry>();
  const addStored = (resource: Resource) => {
    const key = `${resource.resourceType}/${resource.id}`;
    if (!stored.has(key)) stored.set(key, { fullUrl: `${parts.fhirBase}/${key}`, resource });
  };
  const made: DocumentEntry[] = [];
  const makeUp = (resource: Resource): string => {
    const id = randomUUID();
    made.push({ fullUrl: `urn:uuid:${id}`, resource: { ...resource, id } });
    return `urn:uuid:${id}`;
  };

  const patientRef = `Patient/${parts.patient.id}`;
  addStored(parts.patient);
  let authorRef: string;
  if (parts.author) {
    addStored(parts.author);
    authorRef = `${parts.author.resourceType}/${parts.author.id}`;
  } else {
    authorRef = makeUp(serverDevice());
  }
  const grouped = groupBySection(parts.records);
  for (const entries of grouped.values()) entries.forEach(addStored);
  for (const resource of parts.referenced.values()) addStored(resource);
  const lookup: Lookup = (reference) => {
    const ref = isRecord(reference) && typeof reference.reference === 'string' ? reference.reference : undefined;
    return ref ? (stored.get(ref) ?? stored.get(ref.slice(parts.fhirBase.length + 1)))?.resource : undefined;
  };

  const sections = SECTIONS.flatMap((spec) => {
    const entries = grouped.get(spec.key) ?? [];
    if (entries.length > 0) return [section(spec, entries, lookup)];
    if (!spec.noInformation) return [];
    return [noInformationSection(spec, spec.noInformation.text, makeUp(spec.noInformation.resource(patientRef)))];
  });
  const compositionId = randomUUID();
  const composition: Resource = {
    resourceType: 'Composition',
    id: compositionId,
    status: 'final',
    type: { coding: [{ system: LOINC, code: '60591-5', display: 'Patient summary Document' }] },
    subject: { reference: patientRef },
    date: now,
    author: [{ reference: authorRef }],
    title: 'International Patient Summary',
    confidentiality: 'N',
    section: sections,
  };
  const entry: BundleEntry[] = [
    { fullUrl: `urn:uuid:${compositionId}`, resource: composition },
    ...[...stored.values(), ...made].map(({ fullUrl, resource }) => ({ fullUrl, resource })),
  ];
  return {
    resourceType: 'Bundle',
    identifier: { system: 'urn:ietf:rfc:3986', value: `urn:uuid:${randomUUID()}` },
    type: 'document',
    timestamp: now,
    entry,
  };
}

/**
 * The section of each resource, leaving out the results a DiagnosticReport or a panel Observation
 * groups (they are in the Bundle as what the report references, as Medplum lists them).
 */
function groupBySection(records: readonly Resource[]): Map<string, Resource[]> {
  const nested = new Set<string>();
  for (const resource of records) {
    const members = resource.resourceType === 'DiagnosticReport' ? resource.result : resource.resourceType === 'Observation' ? resource.hasMember : undefined;
    if (!Array.isArray(members)) continue;
    for (const member of members) if (isRecord(member) && typeof member.reference === 'string') nested.add(member.reference);
  }
  const grouped = new Map<string, Resource[]>();
  for (const resource of records) {
    const key = sectionOf(resource);
    if (!key || nested.has(`${resource.resourceType}/${resource.id}`)) continue;
    let list = grouped.get(key);
    if (!list) grouped.set(key, (list = []));
    list.push(resource);
  }
  return grouped;
}

function sectionHeader(spec: SectionSpec) {
  return { title: spec.title, code: { coding: [{ system: LOINC, code: spec.code, display: spec.title }] } };
}

function section(spec: SectionSpec, entries: readonly Resource[], lookup: Lookup) {
  return {
    ...sectionHeader(spec),
    text: { status: 'generated', div: narrativeDiv(spec.headings, entries.map((resource) => spec.row(resource, lookup))) },
    entry: entries.map((resource) => ({ reference: `${resource.resourceType}/${resource.id}` })),
  };
}

/** A required section without data: the IG's "no information" entry, and a narrative saying so. */
function noInformationSection(spec: SectionSpec, text: string, reference: string) {
  return { ...sectionHeader(spec), text: { status: 'generated', div: narrativeDiv([], [], text) }, entry: [{ reference }] };
}

/** The author of a summary asked for by a caller without a profile that may author one (a client application). */
function serverDevice(): Resource {
  return {
    resourceType: 'Device',
    deviceName: [{ name: SERVER_NAME, type: 'manufacturer-name' }],
    manufacturer: SERVER_NAME,
    version: [{ value: SERVER_VERSION }],
  };
}
