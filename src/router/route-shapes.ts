import type { FhirRoute, RouteMatch } from './types.js';

/** Most path shapes remembered; a shape seen after that is matched by the trie every time. */
const MAX_SHAPES = 2_000;
/** Most first segments whose shape is remembered (types and operation names: few in use). */
const MAX_FIRST_SEGMENTS = 1_000;
/** Longest path (in segments) whose shape is remembered: the table's routes have at most four. */
const MAX_SEGMENTS = 6;

/** A matched route and, by position, the names of the parameters its path's segments fill. */
interface Remembered {
  readonly route: FhirRoute;
  readonly names: readonly (string | undefined)[];
}

/**
 * One step of the remembered shapes: the next segment's shape (a literal segment itself, else the
 * number that says which parameter patterns accept it) leads to the next step; a path that ends
 * here has `match` (null: no route serves it).
 */
interface ShapeStep {
  readonly next: Map<string | number, ShapeStep>;
  match?: Remembered | null;
}

/**
 * Remembers which route serves each *shape* of path, so that the trie router's walk (several
 * microseconds a request, the most frequent of which differ only in their ids) runs once per shape.
 * A segment's shape is the segment itself when the table names it literally, else which of the
 * parameter patterns of routes at its position accept it: two paths of one shape are served by
 * the same route with the same parameters, because the trie decides by nothing else (it tries a
 * segment only against the patterns of routes at its position). That holds while every route is
 * a list of literal segments and one-segment parameters (no wildcard, no optional parameter, no
 * pattern that can match a `/`); a table with anything else is never remembered. Shapes are kept
 * as steps by segment, so that a lookup builds no key.
 */
export class RouteShapes {
  private readonly literals = new Set<string>();
  /** By position: the parameter patterns of routes there. */
  private readonly patterns: RegExp[][] = [];
  private readonly roots = new Map<string, ShapeStep>();
  /** The shapes of first segments seen: a type or an operation name, tested against the patterns once. */
  private readonly firstShapes = new Map<string, string | number>();
  private remembered = 0;
  private readonly usable: boolean;

  constructor(routes: readonly FhirRoute[]) {
    const sources: Set<string>[] = [];
    let usable = true;
    for (const route of routes) {
      route.path.split('/').forEach((segment, position) => {
        const param = /^:([^{}]+)(?:\{(.+)\})?$/.exec(segment);
        if (!param) {
          if (segment.includes('*') || segment.includes(':')) usable = false;
          this.literals.add(segment);
        } else if (param[2] !== undefined) {
          if (!oneSegmentPattern(param[2])) usable = false;
          (sources[position] ??= new Set()).add(param[2]);
        } else if (param[1].endsWith('?')) usable = false;
      });
    }
    for (let position = 0; position < MAX_SEGMENTS; position++) {
      this.patterns.push([...(sources[position] ?? [])].map((source) => new RegExp(`^(?:${source})$`)));
    }
    this.usable = usable && this.patterns.every((atPosition) => atPosition.length <= 30);
  }

  /** The remembered match of `path` (undefined: not remembered, null: no route serves it). */
  lookup(method: string, path: string): RouteMatch | null | undefined {
    if (!this.usable) return undefined;
    const segments = path.split('/');
    if (segments.length > MAX_SEGMENTS) return undefined;
    let step = this.roots.get(method);
    for (let i = 0; i < segments.length && step !== undefined; i++) step = step.next.get(this.shapeOf(segments[i], i));
    const found = step?.match;
    if (found === undefined || found === null) return found;
    const params: Record<string, string> = {};
    for (let i = 0; i < found.names.length; i++) {
      const name = found.names[i];
      if (name !== undefined) params[name] = segments[i];
    }
    return { route: found.route, params };
  }

  /** Remembers what the trie matched for `path`. */
  remember(method: string, path: string, match: RouteMatch | undefined): void {
    const segments = path.split('/');
    if (!this.usable || segments.length > MAX_SEGMENTS || this.remembered >= MAX_SHAPES) return;
    let step = this.roots.get(method);
    if (step === undefined) this.roots.set(method, (step = { next: new Map() }));
    for (let i = 0; i < segments.length; i++) {
      const shape = this.shapeOf(segments[i], i);
      let next: ShapeStep | undefined = step.next.get(shape);
      if (next === undefined) step.next.set(shape, (next = { next: new Map() }));
      step = next;
    }
    if (step.match === undefined) this.remembered++;
    step.match = match ? { route: match.route, names: match.route.path.split('/').map(paramName) } : null;
  }

  private shapeOf(segment: string, position: number): string | number {
    if (position !== 0) return this.testedShapeOf(segment, position);
    let shape = this.firstShapes.get(segment);
    if (shape === undefined) {
      shape = this.testedShapeOf(segment, 0);
      if (this.firstShapes.size < MAX_FIRST_SEGMENTS) this.firstShapes.set(segment, shape);
    }
    return shape;
  }

  private testedShapeOf(segment: string, position: number): string | number {
    if (this.literals.has(segment)) return segment;
    const patterns = this.patterns[position];
    let accepted = segment === '' ? 0 : 1;
    for (let i = 0; i < patterns.length; i++) if (patterns[i].test(segment)) accepted |= 2 << i;
    return accepted;
  }
}

function paramName(segment: string): string | undefined {
  return /^:([^{}]+)/.exec(segment)?.[1];
}

/**
 * Whether a parameter's pattern can only ever match within one segment, as one whole: no `/`, no
 * `.` outside a character class, no negated class, no class escapes, no alternation (which hono's
 * anchors would split).
 */
function oneSegmentPattern(source: string): boolean {
  if (source.includes('/') || source.includes('|')) return false;
  const withoutEscapes = source.replace(/\\(.)/g, (_, escaped: string) => (/[SWDsdwbB]/.test(escaped) ? '\u0000' : 'e'));
  if (withoutEscapes.includes('\u0000')) return false;
  const classes = withoutEscapes.match(/\[[^\]]*\]/g) ?? [];
  if (classes.some((c) => c.startsWith('[^'))) return false;
  return !withoutEscapes.replace(/\[[^\]]*\]/g, '').includes('.');
}
