import { isResourceType } from '../../../fhir/definitions.js';
import { errors } from '../../../fhir/outcome.js';
import { IDENTIFIER_SUFFIX } from '../../../indexing/add-rows.js';
import { parseReference } from '../../../indexing/references.js';
import { capUtf8, MAX_INDEXED_VALUE_BYTES } from '../../../indexing/text.js';
import type { CompileContext, RowsOf } from './types.js';
import { splitOr, unescape } from '../values.js';
import { existsRows, orJoin, unsupportedModifier } from './shared.js';
import { tokenColumns, tokenCondition } from './token.js';

/** A reference parameter's values on its index rows `x`; a resource type as modifier narrows the target's type. */
export function referenceParameter(name: string, modifier: string | undefined, values: readonly string[], rows: RowsOf, x: string, ctx: CompileContext): string {
  return rows(orJoin(values.map((v) => referenceCondition(name, modifier, unescape(v), referenceColumns(x), ctx))));
}

export interface ReferenceColumns {
  targetType: string;
  targetId: string;
  url: string;
}

export function referenceColumns(x: string): ReferenceColumns {
  return { targetType: `${x}."targetType"`, targetId: `${x}."targetId"`, url: `${x}.url` };
}

export function referenceCondition(name: string, modifier: string | undefined, value: string, cols: ReferenceColumns, ctx: CompileContext): string {
  let typeFilter: string | undefined;
  if (modifier !== undefined) {
    if (!isResourceType(modifier)) throw unsupportedModifier(name, modifier, 'reference');
    typeFilter = modifier;
  }
  const cap = (text: string): string => ctx.args.add(capUtf8(text, MAX_INDEXED_VALUE_BYTES));
  let local = value;
  if (value.startsWith(`${ctx.fhirBase}/`)) local = value.slice(ctx.fhirBase.length + 1);
  if (/^[A-Za-z0-9\-.]{1,64}$/.test(local)) {
    // A bare id: of the :Type given, or of any type.
    const typeCondition = typeFilter ? ` AND ${cols.targetType} = ${ctx.args.add(typeFilter)}` : '';
    return `${cols.targetId} = ${cap(local)}${typeCondition}`;
  }
  const target = parseReference(local);
  if (target && target.url === null && target.targetType && target.targetId) {
    if (typeFilter && typeFilter !== target.targetType) return 'false';
    return `${cols.targetId} = ${cap(target.targetId)} AND ${cols.targetType} = ${ctx.args.add(target.targetType)}`;
  }
  if (!/^[a-z][a-z0-9+.-]*:/i.test(value)) {
    throw errors.invalid(`Invalid reference "${value}" for ${name}: use Type/id, id or an absolute URL`, name);
  }
  return `${cols.url} = ${cap(value)}`;
}

/**
 * `subject:identifier=system|value`: a Reference whose `identifier` matches, as a token. The
 * indexer stores Reference.identifier as token rows under the code `subject:identifier`.
 */
export function compileReferenceIdentifier(name: string, code: string, value: string, alias: string, ctx: CompileContext): string {
  const x = `x${ctx.depth}`;
  const values = splitOr(value);
  if (values.some((v) => v === '')) throw errors.invalid(`Empty value in search parameter ${name}`, name);
  return existsRows('token_index', `${code}${IDENTIFIER_SUFFIX}`, alias, ctx, orJoin(values.map((v) => tokenCondition(name, undefined, v, tokenColumns(x), ctx))));
}
