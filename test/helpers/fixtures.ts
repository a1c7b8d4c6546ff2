/**
 * HL7's FHIR test cases (public FHIR/fhir-test-cases repository, Apache-2.0), copied into
 * test/fixtures/fhir-test-cases: see the README.md there for the commit and the files.
 */
export const FHIR_TEST_CASES_R4 = new URL('../fixtures/fhir-test-cases/r4/', import.meta.url);

/** R4 example resources (`*.json`, and a few published as XML). */
export const R4_EXAMPLES = new URL('examples/', FHIR_TEST_CASES_R4);

/** FHIR GraphQL cases: `manifest.xml` and the queries and expected outputs it lists. */
export const R4_GRAPHQL_CASES = new URL('graphql/', FHIR_TEST_CASES_R4);
