import type { Operation } from '../operations/registry.js';
import { expandOperation } from './expand.js';
import { codeSystemImportOperation, conceptMapImportOperation } from './import.js';
import { lookupOperation } from './lookup.js';
import { subsumesOperation } from './subsumes.js';
import { translateOperation } from './translate.js';
import { codeSystemValidateCodeOperation, valueSetValidateCodeOperation } from './validate-code.js';

/** The terminology operations (SPEC 4.4, 4.5, 4.9). Importing this also installs the CodeSystem write hook. */
export const terminologyOperations: Operation[] = [
  lookupOperation,
  valueSetValidateCodeOperation,
  codeSystemValidateCodeOperation,
  expandOperation,
  subsumesOperation,
  translateOperation,
  codeSystemImportOperation,
  conceptMapImportOperation,
];
