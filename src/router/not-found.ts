import { errors, type OperationOutcomeError } from '../fhir/outcome.js';

/** A path that names a resource type gets not-supported (the interaction is wrong); any other, not-found. */
export function notFound(method: string, path: string): OperationOutcomeError {
  const type = /^([A-Za-z]+)(\/|$)/.exec(path)?.[1];
  return type && /^[A-Z]/.test(type)
    ? errors.notSupported(`${method} /fhir/R4/${path} is not supported: check the resource type and interaction`)
    : errors.notFound(`No endpoint at ${method} /fhir/R4/${path}`);
}
