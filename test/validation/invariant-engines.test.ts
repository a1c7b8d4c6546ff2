import { readdirSync, readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { collectValidationIssues } from '../../src/validation/index.js';
import { setFastPath } from '../../src/validation/invariants/evaluate.js';
import { R4_EXAMPLES } from '../helpers/fixtures.js';

/**
 * The small interpreter that evaluates most invariants (src/validation/invariants/fast.ts) must
 * agree with fhirpath.js: on HL7's R4 examples and on variants of them with one element removed
 * (a seeded choice), which break invariants in many places.
 */

const examples = readdirSync(R4_EXAMPLES)
  .filter((file) => file.endsWith('.json'))
  .sort()
  .map((file) => JSON.parse(readFileSync(new URL(file, R4_EXAMPLES), 'utf8')) as Record<string, unknown>);

type Segment = string | number;

function elementPaths(value: unknown, prefix: Segment[] = [], out: Segment[][] = []): Segment[][] {
  if (typeof value !== 'object' || value === null) return out;
  for (const [key, child] of Object.entries(value)) {
    const path = [...prefix, Array.isArray(value) ? Number(key) : key];
    if (path[0] !== 'resourceType') out.push(path);
    elementPaths(child, path, out);
  }
  return out;
}

/** A copy without the element at `path`; undefined when that would leave an empty array. */
function without(resource: Record<string, unknown>, path: Segment[]): Record<string, unknown> | undefined {
  const copy = structuredClone(resource);
  let owner: Record<string | number, unknown> = copy;
  for (const segment of path.slice(0, -1)) owner = owner[segment] as Record<string | number, unknown>;
  const last = path[path.length - 1] as Segment;
  if (!Array.isArray(owner)) delete owner[last];
  else if (owner.length > 1) owner.splice(last as number, 1);
  else return undefined;
  return copy;
}

function variants(): Record<string, unknown>[] {
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const out: Record<string, unknown>[] = [];
  for (const example of examples) {
    const paths = elementPaths(example);
    for (let i = 0; i < 15 && paths.length > 0; i++) {
      const variant = without(example, paths[Math.floor(random() * paths.length)] as Segment[]);
      if (variant) out.push(variant);
    }
  }
  return out;
}

function issuesByEngine(resource: unknown, fast: boolean): string {
  setFastPath(fast);
  return JSON.stringify(collectValidationIssues(resource, { warnings: true }));
}

afterEach(() => setFastPath(true));

describe('invariant engines', () => {
  it('agree on the R4 examples', () => {
    for (const example of examples) expect(issuesByEngine(example, true)).toBe(issuesByEngine(example, false));
  });

  it('agree on examples with one element removed, many of which break invariants', () => {
    const all = variants();
    let breaking = 0;
    for (const variant of all) {
      const fast = issuesByEngine(variant, true);
      expect(fast).toBe(issuesByEngine(variant, false));
      if (fast.includes('"invariant"')) breaking++;
    }
    expect(breaking).toBeGreaterThan(50);
  });
});
