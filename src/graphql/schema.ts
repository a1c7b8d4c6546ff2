import { readdirSync, readFileSync } from 'node:fs';
import { buildASTSchema, concatAST, parse, type DocumentNode, type GraphQLSchema } from 'graphql';
import { createSchema } from 'graphql-yoga';
import { enumCodes } from '../generated/graphql-enum-codes.js';
import type { Resolvers } from '../generated/graphql.js';
import type { GraphQLContext } from './context.js';
import { applyListArguments } from './list-fields.js';
import { operationResolvers } from './operations.js';
import { resolvers } from './resolvers.js';
import { resourceResolvers } from './resources.js';

/** The SDL folder at the repository root: hand-written parts and files generated from FHIR definitions. */
export const SCHEMA_DIR = new URL('../../schema/', import.meta.url);

/** Every `schema/*.graphql` file, in name order so the merged schema is the same on every machine. */
export function loadTypeDefs(dir: URL = SCHEMA_DIR): string[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith('.graphql'))
    .sort()
    .map((name) => readFileSync(new URL(name, dir), 'utf8'));
}

/**
 * Resolver maps of the schema's parts, merged type by type. Two parts resolving the same field
 * is a programming error, reported at start rather than silently shadowed.
 */
export function mergeResolvers(parts: readonly Resolvers[]): Resolvers {
  const merged: Record<string, Record<string, unknown>> = {};
  for (const part of parts) {
    for (const [typeName, fields] of Object.entries(part as Record<string, object>)) {
      // Scalars are GraphQLScalarType instances, not field maps: taken as they are.
      if (!isPlainObject(fields)) {
        merged[typeName] = fields as Record<string, unknown>;
        continue;
      }
      const target = (merged[typeName] ??= {});
      for (const [field, resolver] of Object.entries(fields)) {
        if (field in target) throw new Error(`GraphQL resolver ${typeName}.${field} is defined twice`);
        target[field] = resolver;
      }
    }
  }
  return merged as Resolvers;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}

/**
 * Internal values of the generated enums: a value whose name differs from its FHIR code
 * (`entered_in_error`) stands for the code (`'entered-in-error'`), so resolvers return and
 * arguments and inputs arrive as FHIR codes, never as GraphQL value names.
 */
export function enumResolvers(): Resolvers {
  return enumCodes as Resolvers;
}

/** Every SDL file of `dir` as one document. */
export function loadTypeDefsDocument(dir: URL = SCHEMA_DIR): DocumentNode {
  return concatAST(loadTypeDefs(dir).map((sdl) => parse(sdl, { noLocation: true })));
}

/**
 * The SDL files as one document, built by graphql-js directly. The generated SDL is megabytes
 * large: merging the files with graphql-tools' mergeTypeDefs would add noticeably to start-up, and
 * so would the SDL validation rules (measured: see bench/RESULTS.md); the files never change at run
 * time, so the tests validate them instead (test/graphql/schema.test.ts). The built schema is still
 * validated by graphql-js before the first query runs.
 */
function buildTypeDefs(): GraphQLSchema {
  return buildASTSchema(loadTypeDefsDocument(), { assumeValidSDL: true });
}

/** Builds the executable schema (reads the SDL files synchronously); servers take sharedSchema(). */
export function buildSchema(): GraphQLSchema {
  return applyListArguments(createSchema<GraphQLContext>({
    typeDefs: buildTypeDefs(),
    resolvers: mergeResolvers([resolvers, enumResolvers(), resourceResolvers(), operationResolvers()]),
    // The schema was just built for this call alone: adding resolvers in place saves copying every type.
    updateResolversInPlace: true,
  }));
}

let shared: GraphQLSchema | undefined;

/**
 * The executable schema every GraphQL handler of the process uses, built by the first. Its inputs
 * are the same for every server: the SDL files (fixed at run time), the resolvers and the built-in
 * operations (operationResolvers' default). No setting changes it: GRAPHQL_MAX_DEPTH, _MAX_COST,
 * _MAX_LIST_SIZE and _INTROSPECTION are applied per handler by its plugins (limits.ts), and what the
 * plugins keep per schema (compiled queries, instance-level schemas) is kept per handler. Sharing it
 * saves the build, a noticeable cost, for every later server of the process, as in tests.
 */
export function sharedSchema(): GraphQLSchema {
  return (shared ??= buildSchema());
}
