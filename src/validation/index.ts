export { collectValidationIssues, validateResource, type CollectOptions, type ValidateOptions } from './validator.js';
export {
  checkConstraints,
  checkInstanceConstraints,
  instancesAt,
  constraintsOf,
  type ConstraintOptions,
  type ElementInstance,
} from './invariants/constraints.js';
export type { Invariant } from './invariants/catalog.js';
