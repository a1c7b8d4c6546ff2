import type { FhirRoute, RouteMatch } from './types.js';

/** Most path shapes remembered; a shape seen after that is matched by the trie every time. */
const MAX_SHAPES = 2_000;
/** Longest path (in segments) whose shape is remembered: the table's routes have at most four. */
const MAX_SEGMENTS = 6;

/** A matched route and, by position, the names of the parameters its path's segments fill. */
interface Remembered {
  readonly route: FhirRoute;
  readonly names: readonly (string | undefined)[];
}

/**
 * Remembers which route serves each *shape* of path, so that the trie router's walk (several
 * microseconds a request, the most frequent of which differ only in their ids) runs once per shape.
 * A segment's shape is the segment itself when the table names it literally, else which of the
 * table's parameter patterns accept it: two paths of one shape are served by the same route
 * with the same parameters, because the trie decides by nothing else. That holds while every
 * route is a list of literal segments and one-segment parameters (no wildcard, no optional
 * parameter, no pattern that can match a `/`); a table with anything else is never remembered.
 */
export class RouteShapes {
  private readonly literals = new Set<string>();
  private readonly patterns: RegExp[] = [];
  private readonly shapes = new Map<string, Remembered | null>();
  private readonly usable: boolean;

  constructor(routes: readonly FhirRoute[]) {
    const sources = new Set<string>();
    let usable = true;
    for (const route of routes) {
      for (const segment of route.path.split('/')) {
        const param = /^:([^{}]+)(?:\{(.+)\})?$/.exec(segment);
        if (!param) {
          if (segment.includes('*') || segment.includes(':')) usable = false;
          this.literals.add(segment);
        } else if (param[2] !== undefined) {
          if (!oneSegmentPattern(param[2])) usable = false;
          sources.add(param[2]);
        } else if (param[1].endsWith('?')) usable = false;
      }
    }
    for (const source of sources) this.patterns.push(new RegExp(`^(?:${source})$`));
    this.usable = usable && this.patterns.length <= 30;
  }

  /** The remembered match of `path` (undefined: not remembered, null: no route serves it). */
  lookup(method: string, path: string): RouteMatch | null | undefined {
    const segments = path.split('/');
    const key = this.keyOf(method, segments);
    if (key === undefined) return undefined;
    const found = this.shapes.get(key);
    if (found === undefined) return undefined;
    if (found === null) return null;
    const params: Record<string, string> = {};
    for (let i = 0; i < found.names.length; i++) {
      const name = found.names[i];
      if (name !== undefined) params[name] = segments[i];
    }
    return { route: found.route, params };
  }

  /** Remembers what the trie matched for `path`. */
  remember(method: string, path: string, match: RouteMatch | undefined): void {
    const key = this.keyOf(method, path.split('/'));
    if (key === undefined || this.shapes.size >= MAX_SHAPES) return;
    this.shapes.set(key, match ? { route: match.route, names: match.route.path.split('/').map(paramName) } : null);
  }

  private keyOf(method: string, segments: readonly string[]): string | undefined {
    if (!this.usable) return undefined;
    if (segments.length > MAX_SEGMENTS) return undefined;
    let key = method;
    for (const segment of segments) {
      if (this.literals.has(segment)) {
        key += `/=${segment}`;
        continue;
      }
      let accepted = segment === '' ? 0 : 1;
      for (let i = 0; i < this.patterns.length; i++) if (this.patterns[i].test(segment)) accepted |= 2 << i;
      key += `/${accepted}`;
    }
    return key;
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
