import { GraphQLScalarType, valueFromASTUntyped } from 'graphql';

/** `JSON`: any JSON value, passed through unchanged (FHIR resources are returned as FHIR JSON). */
export const JSONScalar = new GraphQLScalarType({
  name: 'JSON',
  description: 'Any JSON value: FHIR resources and fragments are passed through as FHIR JSON.',
  specifiedByURL: 'https://www.rfc-editor.org/rfc/rfc8259',
  serialize: (value) => value,
  parseValue: (value) => value,
  parseLiteral: (ast, variables) => valueFromASTUntyped(ast, variables),
});
