/**
 * The server's built-in operations, registered once when the HTTP layer loads. Each lives with its
 * capability (src/terminology, ...); this file only lists them.
 */
import { registerOperation, type Operation } from './registry.js';
import { terminologyOperations } from '../terminology/operations.js';
import { evaluateMeasureOperation } from './measure/evaluate-measure.js';
import { projectOperations } from '../admin/project-operations.js';
import { reindexOperation } from '../search/operations.js';
import { asyncJobCancelOperation } from '../admin/async-job.js';

/**
 * The built-in operations: the ones the committed GraphQL schema has fields for (operations that
 * tests register at run time are REST-only).
 */
export const builtinOperations: readonly Operation[] = [
  ...terminologyOperations,
  evaluateMeasureOperation,
  ...projectOperations,
  reindexOperation,
  asyncJobCancelOperation,
];

for (const operation of builtinOperations) registerOperation(operation);
