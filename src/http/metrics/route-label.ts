import { matchedRoutes } from 'hono/route';
import type { HonoContext } from '../route.js';

/** The label of requests no route took (404s, whatever their path: a path is not a pattern). */
export const UNMATCHED_ROUTE = 'unmatched';

const labels = new Map<string, string>();

/**
 * A route pattern as a metric label: `:name{regex}` becomes `:name` (the regexes of the FHIR
 * route table would make labels unreadable), so `:type{[A-Z][A-Za-z]+}/:id{...}` reads `:type/:id`.
 */
export function routeLabel(pattern: string): string {
  let label = labels.get(pattern);
  if (label === undefined) {
    label = withoutRegexes(pattern);
    labels.set(pattern, label);
  }
  return label;
}

function withoutRegexes(pattern: string): string {
  let out = '';
  let depth = 0;
  for (const ch of pattern) {
    if (ch === '{') depth++;
    else if (ch === '}') depth--;
    else if (depth === 0) out += ch;
  }
  return out;
}

/**
 * The pattern of the route that answered: the one a handler named (the FHIR router's), else the
 * last route Hono matched that is not middleware (`app.use` and `app.all` register method ALL).
 */
export function routeOf(c: HonoContext): string {
  const named = c.get('route');
  if (named !== undefined) return named;
  const routes = matchedRoutes(c);
  for (let i = routes.length - 1; i >= 0; i--) {
    if (routes[i].method !== 'ALL') return routeLabel(routes[i].path);
  }
  return UNMATCHED_ROUTE;
}
