export { validateResource, type ValidateOptions } from './validator.js';
