import { readdirSync, readFileSync } from 'node:fs';
import type { GraphQLSchema } from 'graphql';
import { createSchema } from 'graphql-yoga';
import type { GraphQLContext } from './context.js';
import { resolvers } from './resolvers.js';

/** The SDL folder at the repository root: hand-written parts and files generated from FHIR definitions. */
export const SCHEMA_DIR = new URL('../../schema/', import.meta.url);

/** Every `schema/*.graphql` file, in name order so the merged schema is the same on every machine. */
export function loadTypeDefs(dir: URL = SCHEMA_DIR): string[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith('.graphql'))
    .sort()
    .map((name) => readFileSync(new URL(name, dir), 'utf8'));
}

/** Builds the executable schema; call once at start (reads the SDL files synchronously). */
export function buildSchema(): GraphQLSchema {
  return createSchema<GraphQLContext>({ typeDefs: loadTypeDefs(), resolvers });
}
