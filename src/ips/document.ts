import { randomUUID } from 'node:crypto';
import { SERVER_NAME, SERVER_VERSION } from '../fhir/software.js';
import { isRecord, type Bundle, type Resource } from '../fhir/types.js';
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

/** The document's entries after the Composition: stored resources once each, then what the summary made up. */
class DocumentEntries {
  private readonly stored = new Map<string, DocumentEntry>();
  private readonly made: DocumentEntry[] = [];

  constructor(private readonly fhirBase: string) {}

  /** Adds a stored resource (once) and answers its reference. */
  addStored(resource: Resource): string {
    const key = `${resource.resourceType}/${resource.id}`;
    if (!this.stored.has(key)) this.stored.set(key, { fullUrl: `${this.fhirBase}/${key}`, resource });
    return key;
  }

  /** Adds a resource the summary makes up, with a new id, and answers its `urn:uuid` reference. */
  makeUp(resource: Resource): string {
    const id = randomUUID();
    this.made.push({ fullUrl: `urn:uuid:${id}`, resource: { ...resource, id } });
    return `urn:uuid:${id}`;
  }

  /** The stored resource a Reference names (relative, or absolute on this server), when it is in the document. */
  readonly lookup: Lookup = (reference) => {
    const ref = isRecord(reference) && typeof reference.reference === 'string' ? reference.reference : undefined;
    if (!ref) return undefined;
    return (this.stored.get(ref) ?? this.stored.get(ref.slice(this.fhirBase.length + 1)))?.resource;
  };

  list(): DocumentEntry[] {
    return [...this.stored.values(), ...this.made];
  }
}

export function buildSummaryDocument(parts: SummaryParts): Bundle {
  const now = new Date().toISOString();
  const entries = new DocumentEntries(parts.fhirBase);
  const patientRef = entries.addStored(parts.patient);
  const authorRef = parts.author ? entries.addStored(parts.author) : entries.makeUp(serverDevice());
  const grouped = groupBySection(parts.records);
  for (const list of grouped.values()) list.forEach((resource) => entries.addStored(resource));
  for (const resource of parts.referenced.values()) entries.addStored(resource);
  const sections = SECTIONS.flatMap((spec) => {
    const listed = grouped.get(spec.key) ?? [];
    if (listed.length > 0) return [section(spec, listed, entries.lookup)];
    if (!spec.noInformation) return [];
    return [noInformationSection(spec, spec.noInformation.text, entries.makeUp(spec.noInformation.resource(patientRef)))];
  });
  const composition = summaryComposition(patientRef, authorRef, sections, now);
  return {
    resourceType: 'Bundle',
    identifier: { system: 'urn:ietf:rfc:3986', value: `urn:uuid:${randomUUID()}` },
    type: 'document',
    timestamp: now,
    entry: [{ fullUrl: `urn:uuid:${composition.id}`, resource: composition }, ...entries.list()],
  };
}

function summaryComposition(patientRef: string, authorRef: string, sections: unknown[], date: string): Resource {
  return {
    resourceType: 'Composition',
    id: randomUUID(),
    status: 'final',
    type: { coding: [{ system: LOINC, code: '60591-5', display: 'Patient summary Document' }] },
    subject: { reference: patientRef },
    date,
    author: [{ reference: authorRef }],
    title: 'International Patient Summary',
    confidentiality: 'N',
    section: sections,
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
