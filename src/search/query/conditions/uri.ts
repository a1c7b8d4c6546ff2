import { capUtf8, MAX_INDEXED_VALUE_BYTES } from '../../../indexing/text.js';
import type { CompileContext, RowsOf } from './types.js';
import { likeEscape } from '../sql-builder.js';
import { unescape } from '../values.js';
import { orJoin, unsupportedModifier } from './shared.js';

/** A uri parameter's values on its index rows `x`: equal, `:below` (a prefix) or `:above` (the stored uri is a prefix of the value). */
export function uriParameter(name: string, modifier: string | undefined, values: readonly string[], rows: RowsOf, x: string, ctx: CompileContext): string {
  return rows(orJoin(values.map((v) => uriCondition(name, modifier, unescape(v), `${x}.value`, ctx))));
}

export function uriCondition(name: string, modifier: string | undefined, value: string, column: string, ctx: CompileContext): string {
  const capped = capUtf8(value, MAX_INDEXED_VALUE_BYTES);
  switch (modifier) {
    case undefined:
      return `${column} = ${ctx.args.add(capped)}`;
    case 'below':
      return `${column} LIKE ${ctx.args.add(`${likeEscape(capped)}%`)}`;
    case 'above':
      // The stored uri is a prefix of the value (the value is "below" the stored one).
      return `${ctx.args.add(capped)} LIKE (replace(replace(replace(${column}, '\\', '\\\\'), '%', '\\%'), '_', '\\_') || '%')`;
    default:
      throw unsupportedModifier(name, modifier, 'uri');
  }
}
