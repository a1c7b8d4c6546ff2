import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { isResourceType } from '../../src/fhir/definitions.js';
import { R4_EXAMPLES } from '../helpers/fixtures.js';
import { useTestServer } from '../helpers/server.js';

/**
 * The published FHIR R4 examples (HL7 fhir-test-cases) with the binding checks on: each is
 * created over HTTP, and `$validate` finds no error in it. The one example that is not valid R4
 * in shape is conformance.test.ts's to explain.
 */
const api = await useTestServer();
// Not valid R4: nested items without linkId; two concepts with one code (invariant csd-1).
const NOT_VALID_R4 = new Set(['bundle-questionnaire.json', 'codesystem-example.json']);

const files = readdirSync(R4_EXAMPLES)
  .filter((file) => file.endsWith('.json') && !NOT_VALID_R4.has(file))
  .filter((file) => {
    const type = (read(file) as { resourceType?: unknown }).resourceType;
    return typeof type === 'string' && isResourceType(type);
  })
  .sort();

function read(file: string): { resourceType: string } {
  return JSON.parse(readFileSync(new URL(file, R4_EXAMPLES), 'utf8')) as { resourceType: string };
}

describe('FHIR R4 examples with terminology bindings checked', () => {
  it.each(files)('%s is created, and $validate finds no error in it', async (file) => {
    const p = api.newProject();
    const example = read(file);
    const created = await p.post(`/${example.resourceType}`, example);
    expect(created.status, created.text).toBe(201);
    const validated = await p.post(`/${example.resourceType}/$validate`, example);
    expect(validated.status).toBe(200);
    const errors = (validated.body.issue as { severity: string }[]).filter((i) => i.severity === 'error' || i.severity === 'fatal');
    expect(errors, validated.text).toEqual([]);
  });
});
