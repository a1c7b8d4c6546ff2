import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';

/**
 * Operation input given in the query string (SPEC 4.1 rule 4) is checked as a Parameters body's
 * values are: a value FHIR strings cannot hold is the client's 400, pointing at its entry, before
 * the operation runs.
 */
const api = await useTestServer();

const GENDER = 'http://hl7.org/fhir/administrative-gender';

describe('GET operation input holding a NUL (U+0000)', () => {
  const cases: [string, string][] = [
    ['/ValueSet/$expand?url=a%00b', 'valueUri'],
    ['/ValueSet/$expand?url=http://hl7.org/fhir/ValueSet/administrative-gender&filter=%00', 'valueString'],
    [`/CodeSystem/$lookup?system=${GENDER}&code=ma%00le`, 'valueCode'],
    [`/CodeSystem/$validate-code?url=${GENDER}&code=%00`, 'valueCode'],
    [`/CodeSystem/$subsumes?system=${GENDER}&codeA=%00&codeB=male`, 'valueCode'],
    [`/ConceptMap/$translate?system=${GENDER}&code=male&url=%00`, 'valueUri'],
  ];
  for (const [path, key] of cases) {
    it(`${path}: 400 invalid at the entry's ${key}`, async () => {
      const res = await api.newProject().get(path);
      expect(res.status, res.text).toBe(400);
      expect(res.body.resourceType).toBe('OperationOutcome');
      expect(res.body.issue[0].code).toBe('invalid');
      expect(res.body.issue[0].details.text).toContain('U+0000');
      expect(res.body.issue[0].expression[0]).toMatch(new RegExp(`^Parameters\\.parameter\\[\\d+\\]\\.${key}$`));
    });
  }
});
