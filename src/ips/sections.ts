import { isRecord, type Resource } from '../fhir/types.js';
import { conceptText, firstConceptText, firstDate, observationValue, type Cell } from './narrative.js';

/**
 * The sections of an International Patient Summary (IPS 1.1.0, the Composition-uv-ips profile):
 * their LOINC codes, which of a patient's resources each lists, and the columns of their
 * narrative. The three required sections (medications, allergies, problems) appear even without
 * data, holding the IG's "no information" entry; the others only when they have entries.
 */

export const LOINC = 'http://loinc.org';
const OBSERVATION_CATEGORY = 'http://terminology.hl7.org/CodeSystem/observation-category';
const CONDITION_CLINICAL = 'http://terminology.hl7.org/CodeSystem/condition-clinical';
const CONSENT_SCOPE = 'http://terminology.hl7.org/CodeSystem/consentscope';
/** IPS 1.1.0's code system for "no information" and "none known" entries. */
export const ABSENT_UNKNOWN = 'http://hl7.org/fhir/uv/ips/CodeSystem/absent-unknown-uv-ips';

/** Reads a referenced resource of the summary (a Medication, a Device), when it is in the document. */
export type Lookup = (reference: unknown) => Resource | undefined;

export interface SectionSpec {
  readonly key: string;
  readonly code: string;
  readonly title: string;
  /** The "no information" entry of a required section without data (IPS absent-unknown codes), and its narrative. */
  readonly noInformation?: { readonly text: string; resource(patientRef: string): Resource };
  readonly headings: readonly string[];
  row(resource: Resource, lookup: Lookup): Cell[];
}

const date = (resource: Resource, ...keys: string[]) => firstDate(resource, keys);
const str = (value: unknown): Cell => (typeof value === 'string' ? value : undefined);

function absent(code: string, display: string) {
  return { coding: [{ system: ABSENT_UNKNOWN, code, display }] };
}

function medicationName(resource: Resource, lookup: Lookup): Cell {
  if (resource.medicationCodeableConcept) return conceptText(resource.medicationCodeableConcept);
  const medication = lookup(resource.medicationReference);
  if (medication) return conceptText(medication.code);
  return isRecord(resource.medicationReference) ? str(resource.medicationReference.display) : undefined;
}

function dosageText(dosages: unknown): Cell {
  return Array.isArray(dosages) && isRecord(dosages[0]) ? str(dosages[0].text) : undefined;
}

const resultRow = (resource: Resource): Cell[] => [
  conceptText(resource.code),
  resource.resourceType === 'Observation' ? observationValue(resource) : str(resource.conclusion),
  date(resource, 'effectiveDateTime', 'effectivePeriod', 'effectiveInstant', 'issued'),
];

/** In IPS order (Composition-uv-ips lists the required sections first). */
export const SECTIONS: readonly SectionSpec[] = [
  {
    key: 'medications',
    code: '10160-0',
    title: 'Medication Summary',
    noInformation: {
      text: 'No information about medications',
      resource: (subject) => ({
        resourceType: 'MedicationStatement',
        status: 'unknown',
        medicationCodeableConcept: absent('no-medication-info', 'No information about medications'),
        subject: { reference: subject },
        _effectiveDateTime: { extension: [{ url: 'http://hl7.org/fhir/StructureDefinition/data-absent-reason', valueCode: 'not-applicable' }] },
      }),
    },
    headings: ['Medication', 'Status', 'Directions', 'Date'],
    row: (r, lookup) => [
      medicationName(r, lookup),
      str(r.status),
      dosageText(r.dosage ?? r.dosageInstruction),
      date(r, 'effectiveDateTime', 'effectivePeriod', 'authoredOn', 'dateAsserted'),
    ],
  },
  {
    key: 'allergies',
    code: '48765-2',
    title: 'Allergies and Intolerances',
    noInformation: {
      text: 'No information about allergies',
      resource: (patient) => ({
        resourceType: 'AllergyIntolerance',
        clinicalStatus: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical', code: 'active' }] },
        code: absent('no-allergy-info', 'No information about allergies'),
        patient: { reference: patient },
      }),
    },
    headings: ['Substance', 'Reaction', 'Criticality', 'Status'],
    row: (r) => {
      const reaction = Array.isArray(r.reaction) && isRecord(r.reaction[0]) ? r.reaction[0] : undefined;
      return [conceptText(r.code), firstConceptText(reaction?.manifestation), str(r.criticality), conceptText(r.clinicalStatus)];
    },
  },
  {
    key: 'problems',
    code: '11450-4',
    title: 'Problem List',
    noInformation: {
      text: 'No information about problems',
      resource: (subject) => ({
        resourceType: 'Condition',
        code: absent('no-problem-info', 'No information about problems'),
        subject: { reference: subject },
      }),
    },
    headings: ['Problem', 'Onset', 'Status'],
    row: (r) => [conceptText(r.code), date(r, 'onsetDateTime', 'onsetPeriod', 'onsetString', 'recordedDate'), conceptText(r.clinicalStatus)],
  },
  {
    key: 'immunizations',
    code: '11369-6',
    title: 'Immunizations',
    headings: ['Vaccine', 'Date', 'Status'],
    row: (r) => [conceptText(r.vaccineCode), date(r, 'occurrenceDateTime', 'occurrenceString', 'recorded'), str(r.status)],
  },
  {
    key: 'procedures',
    code: '47519-4',
    title: 'History of Procedures',
    headings: ['Procedure', 'Date', 'Body site', 'Status'],
    row: (r) => [conceptText(r.code), date(r, 'performedDateTime', 'performedPeriod', 'performedString'), firstConceptText(r.bodySite), str(r.status)],
  },
  {
    key: 'devices',
    code: '46264-8',
    title: 'Medical Devices',
    headings: ['Device', 'Status', 'Date'],
    row: (r, lookup) => [conceptText(lookup(r.device)?.type) ?? deviceDisplay(r), str(r.status), date(r, 'timingDateTime', 'timingPeriod', 'recordedOn')],
  },
  { key: 'results', code: '30954-2', title: 'Results', headings: ['Test', 'Result', 'Date'], row: resultRow },
  { key: 'vitalSigns', code: '8716-3', title: 'Vital Signs', headings: ['Measurement', 'Value', 'Date'], row: resultRow },
  {
    key: 'pastIllness',
    code: '11348-0',
    title: 'History of Past Illness',
    headings: ['Condition', 'Onset', 'Abatement', 'Status'],
    row: (r) => [
      conceptText(r.code),
      date(r, 'onsetDateTime', 'onsetPeriod', 'onsetString'),
      date(r, 'abatementDateTime', 'abatementPeriod', 'abatementString'),
      conceptText(r.clinicalStatus),
    ],
  },
  {
    key: 'functionalStatus',
    code: '47420-5',
    title: 'Functional Status',
    headings: ['Assessment', 'Summary', 'Date'],
    row: (r) => [conceptText(r.code), str(r.summary), date(r, 'effectiveDateTime', 'effectivePeriod', 'date')],
  },
  {
    key: 'planOfCare',
    code: '18776-5',
    title: 'Plan of Care',
    headings: ['Plan', 'Status', 'Period'],
    row: (r) => [str(r.title) ?? str(r.description) ?? firstConceptText(r.category), str(r.status), date(r, 'period', 'created')],
  },
  { key: 'socialHistory', code: '29762-2', title: 'Social History', headings: ['Observation', 'Value', 'Date'], row: resultRow },
  { key: 'pregnancy', code: '10162-6', title: 'History of Pregnancies', headings: ['Observation', 'Value', 'Date'], row: resultRow },
  {
    key: 'advanceDirectives',
    code: '42348-3',
    title: 'Advance Directives',
    headings: ['Directive', 'Status', 'Date'],
    row: (r) => [firstConceptText(r.category), str(r.status), str(r.dateTime)],
  },
];

function deviceDisplay(resource: Resource): Cell {
  return isRecord(resource.device) ? str(resource.device.display) : undefined;
}

/** The resource types a summary reads from the patient's compartment. */
export const SUMMARY_TYPES = [
  'AllergyIntolerance',
  'CarePlan',
  'ClinicalImpression',
  'Condition',
  'Consent',
  'DeviceUseStatement',
  'DiagnosticReport',
  'Immunization',
  'MedicationRequest',
  'MedicationStatement',
  'Observation',
  'Procedure',
] as const;

/** Pregnancy status and outcome observations (IPS Observation-pregnancy-status/-outcome). */
const PREGNANCY_CODES = new Set(['82810-3', '11449-6', '11636-8', '11637-6', '11638-4', '11639-2', '11640-0', '11612-9', '11613-7', '11614-5', '33065-4']);
/** A Condition with one of these clinical statuses is history, not a current problem. */
const PAST_STATUSES = new Set(['inactive', 'remission', 'resolved']);

/** The key of the section a resource belongs to, or undefined when the summary leaves it out. */
export function sectionOf(resource: Resource): string | undefined {
  return enteredInError(resource) ? undefined : sectionByType(resource);
}

/** A record marked as a mistake (`status`, or the verification status of a Condition or an allergy) says nothing about the patient. */
function enteredInError(resource: Resource): boolean {
  if (resource.status === 'entered-in-error') return true;
  const verification = resource.verificationStatus;
  return isRecord(verification) && Array.isArray(verification.coding) && verification.coding.some((coding) => isRecord(coding) && coding.code === 'entered-in-error');
}

function sectionByType(resource: Resource): string | undefined {
  switch (resource.resourceType) {
    case 'AllergyIntolerance':
      return 'allergies';
    case 'MedicationStatement':
    case 'MedicationRequest':
      return 'medications';
    case 'Immunization':
      return 'immunizations';
    case 'Procedure':
      return 'procedures';
    case 'DeviceUseStatement':
      return 'devices';
    case 'DiagnosticReport':
      return 'results';
    case 'CarePlan':
      return 'planOfCare';
    case 'ClinicalImpression':
      return 'functionalStatus';
    case 'Condition':
      return codesOf(resource.clinicalStatus, CONDITION_CLINICAL).some((code) => PAST_STATUSES.has(code)) ? 'pastIllness' : 'problems';
    case 'Consent':
      return codesOf(resource.scope, CONSENT_SCOPE).includes('adr') ? 'advanceDirectives' : undefined;
    case 'Observation':
      return observationSection(resource);
    default:
      return undefined;
  }
}

function observationSection(resource: Resource): string {
  if (codesOf(resource.code, LOINC).some((code) => PREGNANCY_CODES.has(code))) return 'pregnancy';
  const categories = (Array.isArray(resource.category) ? resource.category : []).flatMap((c) => codesOf(c, OBSERVATION_CATEGORY));
  if (categories.includes('vital-signs')) return 'vitalSigns';
  if (categories.includes('social-history')) return 'socialHistory';
  // Laboratory, imaging, and observations of any other or no category: IPS "Results".
  return 'results';
}

/** The codes of a CodeableConcept from `system`. */
export function codesOf(concept: unknown, system: string): string[] {
  if (!isRecord(concept) || !Array.isArray(concept.coding)) return [];
  return concept.coding.filter((c) => isRecord(c) && c.system === system && typeof c.code === 'string').map((c) => (c as { code: string }).code);
}
