/**
 * `npm run generate:schema`: writes the generated SDL under schema/ (fhir-types, fhir-inputs, fhir-api,
 * fhir-operations), src/generated/graphql-enum-codes.ts and src/generated/fhir-resources.ts from the
 * FHIR definitions and the operation registry. Run `npm run codegen` afterwards for src/generated/graphql.ts.
 *
 * SCHEMA_OUTPUT_DIR writes the same relative paths under another root instead of the repository
 * (scripts/check-generated.sh generates into a temporary folder and compares).
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { registerBuiltins } from '../src/builtins.js';
import { listOperations } from '../src/operations/registry.js';
import { generateSchemaFiles, OPERATIONS_FILE } from '../src/graphql/generator/index.js';
import { generateOperationsSdl } from '../src/graphql/generator/operations.js';

const repositoryRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const outputRoot = resolve(process.env.SCHEMA_OUTPUT_DIR || repositoryRoot);

const files = generateSchemaFiles();
registerBuiltins();
const operationsSdl = generateOperationsSdl(listOperations());

for (const [path, content] of Object.entries(files)) write(path, content);
if (operationsSdl.trim()) write(OPERATIONS_FILE, operationsSdl);
// No operations: no file, and no stale one left behind.
else rmSync(join(outputRoot, OPERATIONS_FILE), { force: true });

function write(path: string, content: string): void {
  const target = join(outputRoot, path);
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, content);
  console.log(`generate-schema: wrote ${path} (${content.length} bytes)`);
}
