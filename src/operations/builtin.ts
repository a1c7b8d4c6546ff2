/**
 * The server's built-in operations, registered once when the HTTP layer loads. Each lives with its
 * capability (src/terminology, ...); this file only lists them.
 */
import { registerOperation } from './registry.js';
import { terminologyOperations } from '../terminology/operations.js';
import { evaluateMeasureOperation } from './measure/evaluate-measure.js';
import { projectOperations } from '../admin/project-operations.js';

for (const operation of [...terminologyOperations, evaluateMeasureOperation, ...projectOperations]) registerOperation(operation);
