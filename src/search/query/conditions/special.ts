import { errors } from '../../../fhir/outcome.js';
import type { CompileContext } from './types.js';
import { splitOr, unescape } from '../values.js';
import { dateCondition } from './date.js';
import { noModifier, orJoin } from './shared.js';

/** `_id`, `_lastUpdated` and `_project`: columns of the resource itself, not index rows. */

export function compileId(name: string, modifier: string | undefined, value: string, alias: string, ctx: CompileContext): string {
  const ids = splitOr(value).map(unescape);
  if (ids.some((id) => id === '')) throw errors.invalid(`Empty value in search parameter ${name}`, name);
  const list = `${alias}.id IN (${ids.map((id) => ctx.args.add(id)).join(', ')})`;
  if (modifier === 'not') return `NOT (${list})`;
  noModifier(name, modifier, 'token');
  return list;
}

export function compileLastUpdated(name: string, modifier: string | undefined, value: string, alias: string, ctx: CompileContext): string {
  noModifier(name, modifier, 'date');
  const column = `${alias}."lastUpdated"`;
  return orJoin(splitOr(value).map((v) => dateCondition(name, v, column, column, ctx)));
}

export function compileProject(name: string, modifier: string | undefined, value: string, alias: string, ctx: CompileContext): string {
  if (modifier) throw errors.invalid(`Modifier :${modifier} is not supported on _project`, name);
  const ids = splitOr(value).map(unescape);
  return `${alias}."projectId" IN (${ids.map((id) => ctx.args.add(id)).join(', ')})`;
}
