import type { Plugin } from 'graphql-yoga';

/** The FHIR GraphQL directives that reshape results (@flatten, @singleton, @slice, @first). */
export function useFhirDirectives(): Plugin {
  return {};
}
