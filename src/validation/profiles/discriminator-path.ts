/**
 * A slicing discriminator's path (FHIR R4 profiling 5.1.0.11) as steps: element names, and the two
 * FHIRPath functions the spec allows that need nothing but the value itself, `extension('url')`
 * and `ofType(Type)`. A path with anything else (`resolve()`, which would read another resource)
 * is not followed: undefined, and the walk leaves that slicing unchecked.
 */

export type PathStep = { readonly kind: 'name'; readonly name: string } | { readonly kind: 'extension'; readonly url: string } | { readonly kind: 'ofType'; readonly type: string };

const NAME = /^[A-Za-z][A-Za-z0-9_]*(?:\[x\])?$/;
const EXTENSION = /^extension\(\s*'([^']+)'\s*\)$/;
const OF_TYPE = /^ofType\(\s*(?:FHIR\.)?([A-Za-z][A-Za-z0-9]*)\s*\)$/;

/** Parsed paths: a profile's few discriminator paths are parsed once and matched against many values. */
const parsed = new Map<string, readonly PathStep[] | undefined>();

export function parseDiscriminatorPath(path: string): readonly PathStep[] | undefined {
  if (parsed.has(path)) return parsed.get(path);
  const steps = parse(path);
  if (parsed.size < 1000) parsed.set(path, steps);
  return steps;
}

function parse(path: string): PathStep[] | undefined {
  const steps: PathStep[] = [];
  for (const segment of segmentsOf(path.trim())) {
    if (segment === '$this' && steps.length === 0) continue;
    const extension = EXTENSION.exec(segment);
    const ofType = OF_TYPE.exec(segment);
    if (extension) steps.push({ kind: 'extension', url: extension[1] });
    else if (ofType) steps.push({ kind: 'ofType', type: ofType[1] });
    else if (NAME.test(segment)) steps.push({ kind: 'name', name: segment.endsWith('[x]') ? segment.slice(0, -3) : segment });
    else return undefined;
  }
  return steps;
}

/** Splits at the dots outside quotes and parentheses (a quoted url has dots of its own). */
function segmentsOf(path: string): string[] {
  const segments: string[] = [];
  let depth = 0;
  let quoted = false;
  let start = 0;
  for (let index = 0; index < path.length; index++) {
    const char = path[index];
    if (char === "'") quoted = !quoted;
    else if (!quoted && char === '(') depth++;
    else if (!quoted && char === ')') depth--;
    else if (!quoted && depth === 0 && char === '.') {
      segments.push(path.slice(start, index));
      start = index + 1;
    }
  }
  segments.push(path.slice(start));
  return segments;
}
