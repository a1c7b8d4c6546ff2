/**
 * The clinical date search parameter of each resource type: the date a measurement period
 * (Measure/$evaluate-measure, SPEC 4.7) and the `start`/`end` of Patient/$everything restrict.
 * Types not listed (Patient, Practitioner, ...) carry no clinical date and are never restricted.
 */
export const CLINICAL_DATE_PARAMETER: Readonly<Record<string, string>> = {
  AllergyIntolerance: 'date',
  CarePlan: 'date',
  CareTeam: 'date',
  ClinicalImpression: 'date',
  Composition: 'date',
  Condition: 'recorded-date',
  DiagnosticReport: 'date',
  DocumentReference: 'date',
  Encounter: 'date',
  EpisodeOfCare: 'date',
  FamilyMemberHistory: 'date',
  Flag: 'date',
  Immunization: 'date',
  MedicationAdministration: 'effective-time',
  MedicationDispense: 'whenhandedover',
  MedicationRequest: 'authoredon',
  MedicationStatement: 'effective',
  Observation: 'date',
  Procedure: 'date',
  RiskAssessment: 'date',
  ServiceRequest: 'authored',
  Specimen: 'collected',
};
