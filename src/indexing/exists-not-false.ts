import { compileFastPath, type Evaluator } from './fast-path.js';

/**
 * `X.exists() and X != false` (R4's Patient `deceased`: a deceasedBoolean or a deceasedDateTime)
 * on the fast path: one boolean, false when X has no value or its one value is `false`, true
 * otherwise (true, a date, several values), as fhirpath.js answers. fhirpath.js cost a few
 * microseconds on every Patient write for this one parameter. X must be a path the fast path
 * compiles; anything else is left to fhirpath.js.
 */
const SHAPE = /^(.+?)\.exists\(\)\s+and\s+(.+?)\s*!=\s*false$/;

export function compileExistsNotFalse(expression: string, resourceType: string): Evaluator | undefined {
  const match = SHAPE.exec(expression.trim());
  if (!match || match[1].trim() !== match[2].trim()) return undefined;
  const path = compileFastPath(match[1].trim(), resourceType);
  if (!path) return undefined;
  return (resource) => {
    const values = path(resource);
    const isFalse = values.length === 0 || (values.length === 1 && values[0].value === false);
    return [{ value: !isFalse, type: 'boolean' }];
  };
}
