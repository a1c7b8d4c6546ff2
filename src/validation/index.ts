export { collectValidationIssues, validateResource, type CollectOptions, type ValidateOptions } from './validator.js';
