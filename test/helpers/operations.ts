import type { OperationDefinition } from '../../src/operations/definition.js';

/** A test-only system-level operation `$code` that changes data (tests register it, REST-only). */
export function systemTestOperation(code: string, parameter: OperationDefinition['parameter']): OperationDefinition {
  return {
    resourceType: 'OperationDefinition',
    id: code,
    url: `http://flint.test/OperationDefinition/${code}`,
    status: 'active',
    kind: 'operation',
    code,
    system: true,
    type: false,
    instance: false,
    affectsState: true,
    parameter,
  };
}
