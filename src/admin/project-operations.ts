import type { Operation } from '../operations/registry.js';
import { projectCloneOperation } from './project-clone.js';
import { projectInitOperation } from './project-init.js';

/** Project administration operations (SPEC 4.6, 4.7), registered by the composition root (src/builtins.ts). */
export const projectOperations: Operation[] = [projectInitOperation, projectCloneOperation];
