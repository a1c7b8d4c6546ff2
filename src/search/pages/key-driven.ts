import { filterCondition, type Filter } from '../plan/filters.js';
import type { IndexRowsCondition } from '../query/conditions/types.js';
import { selectsByKey } from '../query/conditions/keys.js';
import { indexRowsSource } from '../query/conditions/shared.js';
import type { SqlArgs } from '../../db/sql-args.js';
import { candidateConditions, freshContext, testedOnResource, type DrivenSearch } from './driven.js';

/**
 * The conditions of a search in one project with a key filter (selectsByKey: a reference to given
 * resources, an identifier) and other filters, written so that the key's index rows are the
 * candidates and the other filters are tested on those rows, before any resource row is read:
 * `r.id IN (SELECT d.id FROM (<the key's index rows>) d WHERE <the other filters on d>)`. As
 * EXISTS conditions on `r` (the general form), the other filters can only be tested once the
 * resource row is joined: `Observation?subject=Patient/1&code=8867-4` read the 10 Observations of
 * the patient to keep the one with that code (bench/RESULTS.md has the statement's rates both
 * ways). The rows `d` have the columns the filters correlate on (projectId, resourceType, id);
 * `_lastUpdated` (a column of the resource only) stays on `r`. The key selects few rows, so the
 * statement is planned once like every key search. Its cost grows with the key's rows, one index
 * probe each: for a patient with 100,000 Observations it is the same whatever the code, where the
 * EXISTS form was cheaper for a code most of them have (it stops at the page) and far dearer for
 * one none has. Undefined when no filter drives (the key is a chain, `_id`, `:identifier`), or the
 * key is the only filter (nothing to test before the join). The general page runs these
 * conditions in place of the search's own.
 */
export function keyDrivenConditions(search: DrivenSearch, filters: readonly Filter[]): { args: SqlArgs; where: string } | undefined {
  const at = filters.findIndex(({ name, value, resolved }) => !name.startsWith('_') && !name.includes('.') && selectsByKey(name, value, resolved));
  if (at < 0) return undefined;
  const others = filters.filter((_, i) => i !== at);
  const onRows = others.filter((filter) => !testedOnResource(filter));
  if (onRows.length === 0) return undefined;
  const ctx = freshContext(search);
  let key: IndexRowsCondition | undefined;
  const condition = filterCondition(filters[at], [search.type], 'r', { ...ctx, onRows: (found) => (key = found) });
  if (!key || key.depth !== 0 || !condition.startsWith('EXISTS (')) return undefined;
  const scope = `${key.alias}."projectId" = ${ctx.args.add(search.projectId)} AND ${key.alias}."resourceType" = ${ctx.args.add(search.type)}`;
  const { candidates, onResource } = candidateConditions(search, others, ctx);
  const where = [
    ...onResource,
    // `IS TRUE` keeps the tests per candidate row (a subplan each): as semi-joins, a generic plan
    // (values unknown) may hash or merge a common code's 50,000 index rows against the 10 candidates.
    `r.id IN (SELECT d.id FROM (${indexRowsSource(key, scope)}) d WHERE (${candidates.join(' AND ')}) IS TRUE)`,
  ];
  return { args: ctx.args, where: where.join(' AND ') };
}
