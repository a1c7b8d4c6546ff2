import { readFileSync } from 'node:fs';
import {
  buildASTSchema,
  getNamedType,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isObjectType,
  validateSchema,
  type GraphQLArgument,
  type GraphQLEnumType,
  type GraphQLField,
  type GraphQLInputObjectType,
  type GraphQLObjectType,
  type GraphQLSchema,
} from 'graphql';
import { beforeAll, describe, expect, it } from 'vitest';
import { getResourceTypes } from '../../src/fhir/definitions.js';
import { codeFields, codeValueSets, enumCodes } from '../../src/generated/graphql-enum-codes.js';
import type { Observation, Patient, PatientInput } from '../../src/generated/graphql.js';
import { generateSchemaFiles, OPERATIONS_FILE } from '../../src/graphql/generator/index.js';
import { generateOperationsSdl } from '../../src/graphql/generator/operations.js';
import { buildSchema, loadTypeDefsDocument } from '../../src/graphql/schema.js';
import { registerBuiltins } from '../../src/builtins.js';
import { listOperations } from '../../src/operations/registry.js';

registerBuiltins();
const ROOT = new URL('../../', import.meta.url);

let schema: GraphQLSchema;
beforeAll(() => {
  // The schema the server runs: read-only, so one build serves every test of this file.
  schema = buildSchema();
});

function objectType(name: string): GraphQLObjectType {
  const type = schema.getType(name);
  if (!isObjectType(type)) throw new Error(`${name} is not an object type`);
  return type;
}

function field(typeName: string, fieldName: string): GraphQLField<unknown, unknown> {
  const found = objectType(typeName).getFields()[fieldName];
  if (!found) throw new Error(`${typeName}.${fieldName} does not exist`);
  return found;
}

function inputType(name: string): GraphQLInputObjectType {
  const type = schema.getType(name);
  if (!isInputObjectType(type)) throw new Error(`${name} is not an input type`);
  return type;
}

function enumType(name: string): GraphQLEnumType {
  const type = schema.getType(name);
  if (!isEnumType(type)) throw new Error(`${name} is not an enum`);
  return type;
}

/** `name: Type` of every argument, in order. */
function signature(args: readonly GraphQLArgument[]): string[] {
  return args.map((arg) => `${arg.name}: ${String(arg.type)}`);
}

function fieldTypes(type: GraphQLObjectType | GraphQLInputObjectType, names: string[]): Record<string, string> {
  const fields = type.getFields();
  return Object.fromEntries(names.map((name) => [name, String(fields[name]?.type)]));
}

describe('generated schema: validity', () => {
  it('passes the SDL validation rules and the type system validation', () => {
    // The server skips SDL validation at start (assumeValidSDL); it is done here instead.
    const full = buildASTSchema(loadTypeDefsDocument());
    expect(validateSchema(full)).toEqual([]);
    expect(validateSchema(schema)).toEqual([]);
  });

  it('has an object type implementing Resource for every resource type, and an enum listing them', () => {
    const resourceTypes = getResourceTypes();
    expect(resourceTypes.length).toBeGreaterThan(150);
    for (const name of resourceTypes) {
      expect(objectType(name).getInterfaces().map(String), name).toEqual(['Resource']);
    }
    expect(isInterfaceType(schema.getType('Resource'))).toBe(true);
    expect(enumType('ResourceType').getValues().map((value) => value.name)).toEqual([...resourceTypes]);
    expect(objectType('Project')).toBeDefined();
    expect(objectType('ProjectMembership')).toBeDefined();
  });
});

describe('generated schema: object types', () => {
  it('gives Patient its FHIR JSON properties with GraphQL scalar, object and list types', () => {
    expect(fieldTypes(objectType('Patient'), ['resourceType', 'id', 'meta', 'active', 'birthDate', 'name', 'contact', 'contained'])).toEqual({
      resourceType: 'String',
      id: 'ID',
      meta: 'Meta',
      active: 'Boolean',
      birthDate: 'String',
      name: '[HumanName]',
      contact: '[PatientContact]',
      contained: '[Resource]',
    });
    expect(Object.keys(objectType('Patient').getFields())[0]).toBe('resourceType');
  });

  it('names backbone elements by their PascalCase path and reuses the type of a content reference', () => {
    expect(String(field('Bundle', 'entry').type)).toBe('[BundleEntry]');
    expect(String(field('BundleEntry', 'request').type)).toBe('BundleEntryRequest');
    expect(String(field('BundleEntryRequest', 'url').type)).toBe('String');
    expect(String(field('QuestionnaireItem', 'item').type)).toBe('[QuestionnaireItem]');
  });

  it('writes a choice element as one field per type', () => {
    expect(fieldTypes(objectType('Observation'), ['valueQuantity', 'valueString', 'valueCodeableConcept', 'valueBoolean', 'valueInteger'])).toEqual({
      valueQuantity: 'Quantity',
      valueString: 'String',
      valueCodeableConcept: 'CodeableConcept',
      valueBoolean: 'Boolean',
      valueInteger: 'Int',
    });
    expect(objectType('Observation').getFields()['value[x]']).toBeUndefined();
    expect(String(field('Patient', 'deceasedDateTime').type)).toBe('String');
  });

  it('gives repeating elements list arguments, and extensions a url argument', () => {
    expect(signature(field('Patient', 'name').args)).toEqual(['fhirpath: String', '_count: Int', '_offset: Int']);
    expect(signature(field('Patient', 'extension').args)).toEqual(['url: String', 'fhirpath: String', '_count: Int', '_offset: Int']);
    expect(field('Patient', 'gender').args).toEqual([]);
  });

  it('gives Reference a resource field resolving the target, optionally restricted to one type or optional', () => {
    const resource = field('Reference', 'resource');
    expect(String(resource.type)).toBe('Resource');
    expect(signature(resource.args)).toEqual(['type: ResourceType', 'optional: Boolean']);
  });

  it('adds reverse reference fields listing the resources that point at this one', () => {
    const reverse = field('Patient', 'ObservationList');
    expect(String(reverse.type)).toBe('[Observation]');
    expect(signature(reverse.args)).toEqual(['_reference: ObservationReferenceParam!', '_params: [SearchParam!]', '_count: Int', '_offset: Int', '_sort: String']);
    const params = enumType('ObservationReferenceParam').getValues();
    expect(params.map((value) => value.name)).toEqual(expect.arrayContaining(['subject', 'patient', 'has_member', 'performer']));
    // Observation.subject cannot point at a Medication: no such field there.
    expect(objectType('Medication').getFields().PatientList).toBeUndefined();
    expect(objectType('Patient').getFields().PatientList).toBeDefined(); // Patient.link
  });

  it('renames a backbone that would take the name of an input type', () => {
    expect(String(field('Task', 'input').type)).toBe('[TaskInputElement]');
    expect(String(inputType('TaskInput').getFields().input.type)).toBe('[TaskInputElementInput]');
  });
});

describe('generated schema: coded fields and enums', () => {
  it('types a coded element with a required binding String, as FHIR GraphQL and Medplum do', () => {
    expect(String(field('Patient', 'gender').type)).toBe('String');
    expect(String(field('Observation', 'status').type)).toBe('String');
    expect(String(field('SearchParameter', 'base').type)).toBe('[String]');
    expect(schema.getType('AdministrativeGender')).toBeUndefined();
    expect(schema.getType('ObservationStatus')).toBeUndefined();
  });

  it('lists the value set of each coded field for the TypeScript types, with FHIR codes', () => {
    expect(codeFields.Patient.gender).toBe('AdministrativeGender');
    expect(codeFields.Observation.status).toBe('ObservationStatus');
    expect(codeValueSets.AdministrativeGender.codes).toEqual(['male', 'female', 'other', 'unknown']);
    expect(codeValueSets.ObservationStatus.codes).toContain('entered-in-error');
    expect(enumCodes.ObservationStatus).toBeUndefined();
  });

  it('keeps reference search parameter names an enum, mapped to their codes', () => {
    expect(enumType('PatientReferenceParam').getValue('general_practitioner')?.value).toBe('general-practitioner');
    expect(enumCodes.PatientReferenceParam).toMatchObject({ general_practitioner: 'general-practitioner' });
  });

  it('keeps a binding whose codes cannot be enum values out of the TypeScript unions', () => {
    // quantity-comparator: <, <=, >=, >
    expect(String(field('Quantity', 'comparator').type)).toBe('String');
    expect(codeFields.Quantity?.comparator).toBeUndefined();
    // mimetypes: not finitely expandable
    expect(codeFields.Attachment?.contentType).toBeUndefined();
  });
});

describe('generated schema: input types', () => {
  it('has an input type per resource, data type and backbone, without list arguments or Reference.resource', () => {
    const patient = inputType('PatientInput');
    expect(fieldTypes(patient, ['resourceType', 'id', 'gender', 'name', 'contact', 'contained'])).toEqual({
      resourceType: 'String',
      id: 'ID',
      gender: 'String',
      name: '[HumanNameInput]',
      contact: '[PatientContactInput]',
      contained: '[JSON]',
    });
    expect(Object.values(patient.getFields()).every((input) => !String(input.type).endsWith('!'))).toBe(true);
    expect(inputType('ReferenceInput').getFields().resource).toBeUndefined();
    expect(String(inputType('ReferenceInput').getFields().reference.type)).toBe('String');
  });
});

describe('generated schema: Query and Mutation', () => {
  it('reads by id, searches with the search parameters as arguments, and pages through a connection', () => {
    expect(signature(field('Query', 'Patient').args)).toEqual(['id: ID!']);
    const list = field('Query', 'PatientList');
    expect(String(list.type)).toBe('[Patient]');
    const args = signature(list.args);
    expect(args).toEqual(
      expect.arrayContaining(['general_practitioner: [String!]', 'birthdate: [String!]', '_id: [String!]', '_lastUpdated: [String!]']),
    );
    expect(args.slice(-5)).toEqual(['_count: Int', '_offset: Int', '_sort: String', '_cursor: String', '_filter: String']);

    const connection = field('Query', 'PatientConnection');
    expect(String(connection.type)).toBe('PatientConnection');
    expect(signature(connection.args)).toEqual([...args, '_total: String']);
    expect(fieldTypes(objectType('PatientConnection'), ['count', 'offset', 'pageSize', 'first', 'previous', 'next', 'last', 'edges'])).toEqual({
      count: 'Int',
      offset: 'Int',
      pageSize: 'Int',
      first: 'String',
      previous: 'String',
      next: 'String',
      last: 'String',
      edges: '[PatientConnectionEdge]',
    });
    expect(fieldTypes(objectType('PatientConnectionEdge'), ['mode', 'score', 'resource'])).toEqual({
      mode: 'String',
      score: 'Float',
      resource: 'Patient',
    });
  });

  it('creates, updates and deletes every resource type', () => {
    expect(String(field('Mutation', 'PatientCreate').type)).toBe('Patient');
    expect(signature(field('Mutation', 'PatientCreate').args)).toEqual(['res: PatientInput!']);
    expect(signature(field('Mutation', 'PatientUpdate').args)).toEqual(['id: ID!', 'res: PatientInput!', 'ifMatch: String']);
    expect(String(field('Mutation', 'PatientDelete').type)).toBe('OperationOutcome');
    expect(signature(field('Mutation', 'PatientDelete').args)).toEqual(['id: ID!']);
    for (const type of getResourceTypes()) {
      for (const name of [`${type}Create`, `${type}Update`, `${type}Delete`]) expect(field('Mutation', name), name).toBeDefined();
      for (const name of [type, `${type}List`, `${type}Connection`]) expect(field('Query', name), name).toBeDefined();
    }
    expect(getNamedType(field('Mutation', 'TaskCreate').args[0].type).name).toBe('TaskInput');
  });
});

describe('generated files', () => {
  it('are what the generator writes now (run `npm run generate:schema` when this fails)', () => {
    const files = generateSchemaFiles();
    const operations = generateOperationsSdl(listOperations());
    if (operations.trim()) files[OPERATIONS_FILE] = operations;
    for (const [path, content] of Object.entries(files)) {
      expect(readFileSync(new URL(path, ROOT), 'utf8'), path).toBe(content);
    }
  });

  it('start with a header saying they are generated', () => {
    for (const path of Object.keys(generateSchemaFiles())) {
      expect(readFileSync(new URL(path, ROOT), 'utf8'), path).toMatch(/^(#|\/\/) Generated by `npm run generate:schema`/);
    }
  });
});

describe('generated TypeScript types', () => {
  it('type FHIR JSON: coded fields as the union of their FHIR codes, absent fields optional, no __typename', () => {
    // Checked by the compiler (`npx tsc --noEmit`): FHIR JSON is assignable to the generated types.
    const patient: Patient = { resourceType: 'Patient', gender: 'female', name: [{ family: 'Chalmers', given: ['Peter'] }] };
    const observation: Observation = { resourceType: 'Observation', status: 'entered-in-error', code: { text: 'x' } };
    // @ts-expect-error a stored Observation's status is one of its value set's codes
    const wrong: Observation = { resourceType: 'Observation', status: 'entered_in_error' };
    // An input takes any string, as the server does (the validator judges it).
    const sent: string = 'male';
    const input: PatientInput = { resourceType: 'Patient', gender: sent };
    expect([patient.gender, observation.status, wrong.status, input.gender]).toEqual(['female', 'entered-in-error', 'entered_in_error', 'male']);
  });
});
