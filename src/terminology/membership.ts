import type { ComposeElement, ComposeFilter, ConceptDetail, LoadedSystem, SystemRef, TerminologyCaller } from './types.js';
import type { Database } from '../db/database.js';
import { errors } from '../fhir/outcome.js';
import { isRecord, type Resource } from '../fhir/types.js';
import { requestCache } from './cache.js';
import { compileElement, type ConceptTest } from './in-memory.js';
import type { LanguageDesignation } from './language.js';
import { findValueSet } from './resources.js';
import { findSystem } from './systems.js';
import { badRegexFilter, regexCondition } from './regex-filter.js';

export interface Member {
  system: string;
  version?: string;
  code: string;
  display?: string;
  abstract: boolean;
  inactive: boolean;
  designations: LanguageDesignation[];
}

interface ConceptRowOut {
  code: string;
  display: string | null;
  abstract: boolean;
  inactive: boolean;
  seq: number;
  designations: string | null;
}

/** Nesting of value set imports beyond which a value set is taken to import itself. */
const MAX_IMPORT_DEPTH = 10;
/** Largest expansion built in memory (several includes, imports, or nesting). */
const MAX_EXPANSION = 100_000;

export class Membership {
  private readonly systems = new Map<string, Promise<SystemRef | undefined>>();

  /** `designations`: expansions carry each member's designations (for displayLanguage). */
  constructor(
    private readonly caller: TerminologyCaller,
    private readonly db: Database,
    private readonly options: { designations?: boolean } = {},
  ) {}

  /** The member `system|code` of the value set, or undefined with the reason. */
  async find(valueSet: Resource, system: string | undefined, code: string, depth = 0): Promise<{ member?: Member; reason?: string }> {
    const { include, exclude } = compose(valueSet);
    let member: Member | undefined;
    let reason: string | undefined;
    for (const element of include) {
      const found = await this.matchOne(element, system, code, depth);
      if (found.member) {
        member = found.member;
        break;
      }
      reason ??= found.reason;
    }
    if (!member) return { reason };
    for (const element of exclude) {
      if ((await this.matchOne(element, member.system, code, depth)).member) return {};
    }
    return { member };
  }

  /** Every member, in the order of the includes and of each code system. */
  async expand(valueSet: Resource, options: { filter?: string; offset: number; count?: number }, depth = 0): Promise<{ members: Member[]; total: number }> {
    const { include, exclude } = compose(valueSet);
    if (include.length === 1 && include[0].system && !include[0].valueSet?.length && exclude.every((e) => e.system && !e.valueSet?.length)) {
      // The common shape: one system. Paging and counting happen in the database.
      return this.expandElement(include[0], exclude, options);
    }
    const seen = new Set<string>();
    const members: Member[] = [];
    for (const element of include) {
      const part = await this.expandElement(element, [], { filter: options.filter, offset: 0 }, depth);
      for (const member of part.members) {
        const key = `${member.system}|${member.code}`;
        if (seen.has(key)) continue;
        let excluded = false;
        for (const e of exclude) if ((await this.matchOne(e, member.system, member.code, depth)).member) excluded = true;
        if (excluded) continue;
        seen.add(key);
        members.push(member);
        if (members.length > MAX_EXPANSION) throw errors.tooCostly(`The expansion has more than ${MAX_EXPANSION} codes: use filter, offset and count`);
      }
    }
    const end = options.count === undefined ? undefined : options.offset + options.count;
    return { members: members.slice(options.offset, end), total: members.length };
  }

  private async expandElement(
    element: ComposeElement,
    exclude: ComposeElement[],
    options: { filter?: string; offset: number; count?: number },
    depth = 0,
  ): Promise<{ members: Member[]; total: number }> {
    if (!element.system) {
      // Only imported value sets: the members of the first that are in all the others.
      const [first, ...others] = await this.importedValueSets(element, depth);
      const { members } = await this.expand(first, { filter: options.filter, offset: 0 }, depth + 1);
      const kept: Member[] = [];
      for (const member of members) if (await this.inAll(others, member.system, member.code, depth)) kept.push(member);
      const end = options.count === undefined ? undefined : options.offset + options.count;
      return { members: kept.slice(options.offset, end), total: kept.length };
    }
    const system = await this.system(element.system, element.version);
    if (!system) {
      if (element.concept?.length && !element.filter?.length) {
        const listed = element.concept.map((c) => listedMember(element, c)).filter((m) => matchesText(m, options.filter));
        const end = options.count === undefined ? undefined : options.offset + options.count;
        return { members: listed.slice(options.offset, end), total: listed.length };
      }
      throw errors.invalid(`The value set includes code system ${element.system}, which is not known to this server`);
    }
    const page = (await this.expandInMemory(element, system, exclude, options)) ?? (await this.expandInSql(element, system, exclude, options));
    let { members, total } = page;
    if (element.valueSet?.length) {
      const imported = await this.importedValueSets(element, depth);
      const kept: Member[] = [];
      for (const member of members) if (await this.inAll(imported, member.system, member.code, depth)) kept.push(member);
      total -= members.length - kept.length;
      members = kept;
    }
    return { members, total };
  }

  /** The page of one system's members from memory; undefined when the system or a filter needs SQL. */
  private async expandInMemory(
    element: ComposeElement,
    system: SystemRef,
    exclude: ComposeElement[],
    options: { filter?: string; offset: number; count?: number },
  ): Promise<{ members: Member[]; total: number } | undefined> {
    const loaded = await this.loaded(system);
    if (!loaded) return undefined;
    const include = compileElement(element, loaded, unsupportedFilter);
    if (!include) return undefined;
    const excluded: ConceptTest[] = [];
    for (const e of exclude) {
      if (e.system === undefined || e.system !== element.system || (await this.system(e.system, e.version))?.id !== system.id) continue;
      const test = compileElement(e, loaded, unsupportedFilter);
      if (!test) return undefined;
      excluded.push(test);
    }
    const needle = options.filter ? options.filter.toLowerCase() : undefined;
    const end = options.count === undefined ? Infinity : options.offset + options.count;
    const members: Member[] = [];
    let total = 0;
    for (const c of loaded.concepts) {
      if (!include(c) || (excluded.length > 0 && excluded.some((test) => test(c)))) continue;
      if (needle !== undefined && !c.code.toLowerCase().includes(needle) && !(c.display ?? '').toLowerCase().includes(needle)) continue;
      // Counted for the total; built only when on the page.
      if (total >= options.offset && total < end) members.push(conceptMember(element, system, c));
      total++;
    }
    return { members, total };
  }

  /** The page of one system's members, paged and counted by the database. */
  private async expandInSql(
    element: ComposeElement,
    system: SystemRef,
    exclude: ComposeElement[],
    options: { filter?: string; offset: number; count?: number },
  ): Promise<{ members: Member[]; total: number }> {
    const args: unknown[] = [system.id];
    const where = [`c."systemId" = $1::uuid`, this.predicate(element, args)];
    for (const e of exclude) {
      if (e.system === undefined || e.system !== element.system) continue;
      const excludedSystem = await this.system(e.system, e.version);
      if (excludedSystem?.id === system.id) where.push(`NOT (${this.predicate(e, args)})`);
    }
    if (options.filter) {
      args.push(`%${options.filter.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`);
      where.push(`(c.display ILIKE $${args.length} OR c.code ILIKE $${args.length})`);
    }
    args.push(options.offset);
    let paging = `OFFSET $${args.length}`;
    if (options.count !== undefined) {
      args.push(options.count);
      paging += ` LIMIT $${args.length}`;
    }
    const rows = await this.concepts<ConceptRowOut & { total: number | string }>(
      `SELECT c.code, c.display, c.abstract, c.inactive, c.seq, ${this.options.designations ? DESIGNATIONS : 'NULL'} AS designations,
         count(*) OVER () AS total
       FROM terminology_concept c WHERE ${where.join(' AND ')} ORDER BY c.seq ${paging}`,
      args,
      [element, ...exclude],
    );
    const members = rows.map((row) => toMember(element, system, row));
    const total = rows.length > 0 ? Number(rows[0].total) : await this.countOnly(where, args, options);
    return { members, total };
  }

  /**
   * Concept rows selected by the filters of `elements`: a regex filter that does not compile (in a
   * value set written before the write check, or given inline) is the client's 400.
   */
  private async concepts<R>(sql: string, args: unknown[], elements: readonly ComposeElement[]): Promise<R[]> {
    try {
      return await this.db.query<R>(sql, args);
    } catch (error) {
      throw badRegexFilter(error, elements) ?? error;
    }
  }

  /** The code system in memory, when this request may use the cache and the system is small enough. */
  private async loaded(system: SystemRef): Promise<LoadedSystem | undefined> {
    const cache = await requestCache(this.caller, this.db);
    return cache?.system(system.id);
  }

  /** The total when the page is past the end (no row carries it). */
  private async countOnly(where: string[], args: unknown[], options: { count?: number }): Promise<number> {
    const used = args.slice(0, args.length - (options.count !== undefined ? 2 : 1));
    const rows = await this.db.query<{ total: number | string }>(
      `SELECT count(*) AS total FROM terminology_concept c WHERE ${where.join(' AND ')}`,
      used,
    );
    return Number(rows[0]?.total ?? 0);
  }

  /** Whether one include/exclude element matches `system|code`. */
  private async matchOne(element: ComposeElement, system: string | undefined, code: string, depth: number): Promise<{ member?: Member; reason?: string }> {
    if (element.system !== undefined && system !== undefined && element.system !== system) return {};
    let member: Member | undefined;
    if (element.system !== undefined) {
      const known = await this.system(element.system, element.version);
      if (!known) {
        const listed = element.concept?.find((c) => c.code === code);
        if (listed && !element.filter?.length) member = listedMember(element, listed);
        else return { reason: `Code system ${element.system} is not known to this server` };
      } else {
        const loaded = await this.loaded(known);
        const test = loaded && compileElement(element, loaded, unsupportedFilter);
        if (loaded && test) {
          const concept = loaded.byCode.get(code);
          if (!concept || !test(concept)) return {};
          member = conceptMember(element, known, concept);
        } else {
          const args: unknown[] = [known.id, code];
          const rows = await this.concepts<ConceptRowOut>(
            `SELECT c.code, c.display, c.abstract, c.inactive, c.seq, ${DESIGNATIONS} AS designations
             FROM terminology_concept c WHERE c."systemId" = $1::uuid AND c.code = $2 AND ${this.predicate(element, args)}`,
            args,
            [element],
          );
          if (!rows[0]) return {};
          member = toMember(element, known, rows[0]);
        }
      }
    }
    if (element.valueSet?.length) {
      const imported = await this.importedValueSets(element, depth);
      if (!member) {
        const found = await this.find(imported[0], system, code, depth + 1);
        if (!found.member) return found;
        member = found.member;
        imported.shift();
      }
      if (!(await this.inAll(imported, member.system, member.code, depth))) return {};
    }
    return { member };
  }

  private async inAll(valueSets: Resource[], system: string, code: string, depth: number): Promise<boolean> {
    for (const valueSet of valueSets) if (!(await this.find(valueSet, system, code, depth + 1)).member) return false;
    return true;
  }

  private async importedValueSets(element: ComposeElement, depth: number): Promise<Resource[]> {
    if (depth >= MAX_IMPORT_DEPTH) throw errors.invalid('Value set imports nest too deeply (a value set imports itself?)');
    const sets: Resource[] = [];
    for (const url of element.valueSet ?? []) {
      const valueSet = await findValueSet(this.caller, this.db, url);
      if (!valueSet) throw errors.invalid(`ValueSet ${url} (imported by compose.include.valueSet) not found`);
      sets.push(valueSet);
    }
    return sets;
  }

  private system(url: string, version?: string): Promise<SystemRef | undefined> {
    const key = `${url}|${version ?? ''}`;
    let found = this.systems.get(key);
    if (!found) {
      found = findSystem(this.caller, this.db, url, version);
      this.systems.set(key, found);
    }
    return found;
  }

  /** The SQL condition on concept `c` for one element's concept list and filters (all must hold). */
  private predicate(element: ComposeElement, args: unknown[]): string {
    const parts: string[] = [];
    if (element.concept?.length) {
      args.push(element.concept.map((c) => c.code));
      parts.push(`c.code = ANY($${args.length}::text[])`);
    }
    for (const filter of element.filter ?? []) parts.push(filterSql(filter, args));
    return parts.length > 0 ? `(${parts.join(' AND ')})` : 'TRUE';
  }
}

/** The designations of concept `c`, as JSON, in the shape of LanguageDesignation. */
const DESIGNATIONS = `(SELECT json_agg(json_build_object('language', d.language, 'useCode', d."useCode", 'value', d.value) ORDER BY d.seq)::text
   FROM terminology_designation d WHERE d."systemId" = c."systemId" AND d.code = c.code)`;

function unsupportedFilter(filter: ComposeFilter): never {
  throw errors.invalid(`Value set filter operator "${filter.op}" is not supported (property ${filter.property})`);
}

function compose(valueSet: Resource): { include: ComposeElement[]; exclude: ComposeElement[] } {
  const value = isRecord(valueSet.compose) ? valueSet.compose : {};
  return {
    include: Array.isArray(value.include) ? (value.include as ComposeElement[]) : [],
    exclude: Array.isArray(value.exclude) ? (value.exclude as ComposeElement[]) : [],
  };
}

/** Concept `c` is the code `${valueArg}` or one of its descendants (terminology_closure). */
function isAOrSelf(valueArg: string): string {
  // EXISTS with equality correlation becomes a semi-join (one index probe for a single code, a
  // join for an expansion); an IN over a correlated subquery would run once per concept.
  return `(c.code = ${valueArg} OR EXISTS (SELECT 1 FROM terminology_closure x
            WHERE x."systemId" = c."systemId" AND x.ancestor = ${valueArg} AND x.descendant = c.code))`;
}

const HIERARCHY_PROPERTIES = new Set(['concept', 'code']);

function filterSql(filter: ComposeFilter, args: unknown[]): string {
  const { property, op, value } = filter;
  args.push(value);
  const v = `$${args.length}`;
  const onCode = HIERARCHY_PROPERTIES.has(property);
  switch (op) {
    case 'is-a':
      return isAOrSelf(v);
    case 'descendent-of':
      return `(c.code <> ${v} AND ${isAOrSelf(v)})`;
    case 'is-not-a':
      return `NOT ${isAOrSelf(v)}`;
    case 'generalizes':
      return `(c.code = ${v} OR EXISTS (SELECT 1 FROM terminology_closure x
                WHERE x."systemId" = c."systemId" AND x.descendant = ${v} AND x.ancestor = c.code))`;
    case '=':
      return valueTest(property, onCode, (column) => `${column} = ${v}`);
    case 'regex':
      return valueTest(property, onCode, (column) => regexCondition(column, v));
    case 'in':
      return valueTest(property, onCode, (column) => `${column} = ANY(string_to_array(${v}, ','))`);
    case 'not-in':
      return `NOT ${valueTest(property, onCode, (column) => `${column} = ANY(string_to_array(${v}, ','))`)}`;
    case 'exists':
      // A display exists when the concept has one (valueTest would read a missing display as false).
      return `(${v} = 'true') = ${!onCode && property === 'display' ? '(c.display IS NOT NULL)' : valueTest(property, onCode, () => 'TRUE')}`;
    default:
      return unsupportedFilter(filter);
  }
}

/** A test on the values of `property` of concept `c`: code, display, parent/child, or a stored property. */
function valueTest(property: string, onCode: boolean, test: (column: string) => string): string {
  if (onCode) return `(${test('c.code')})`;
  if (property === 'display') return `COALESCE(${test('c.display')}, FALSE)`;
  if (property === 'parent' || property === 'child') {
    const [mine, other] = property === 'parent' ? ['child', 'parent'] : ['parent', 'child'];
    return `EXISTS (SELECT 1 FROM terminology_hierarchy h WHERE h."systemId" = c."systemId" AND h.${mine} = c.code AND ${test(`h.${other}`)})`;
  }
  const name = `'${property.replace(/'/g, "''")}'`;
  return `EXISTS (SELECT 1 FROM terminology_property p WHERE p."systemId" = c."systemId" AND p.code = c.code AND p.property = ${name}
            AND (${test('p.value')} OR (p.type = 'Coding' AND ${test(`(p.value::json->>'code')`)})))`;
}

const listedDisplayCache = new WeakMap<ComposeElement, Map<string, string | undefined>>();

/** The displays a concept list gives, by code (looked up once per member of an expansion). */
function listedDisplays(element: ComposeElement): Map<string, string | undefined> {
  let found = listedDisplayCache.get(element);
  if (!found) {
    found = new Map();
    for (const c of element.concept ?? []) if (!found.has(c.code)) found.set(c.code, c.display);
    listedDisplayCache.set(element, found);
  }
  return found;
}

function toMember(element: ComposeElement, system: SystemRef, row: ConceptRowOut): Member {
  const listed = element.concept?.length ? listedDisplays(element).get(row.code) : undefined;
  return {
    system: system.url,
    ...(system.version ? { version: system.version } : {}),
    code: row.code,
    display: listed ?? row.display ?? undefined,
    abstract: row.abstract,
    inactive: row.inactive,
    designations: row.designations ? (JSON.parse(row.designations) as LanguageDesignation[]) : [],
  };
}

function conceptMember(element: ComposeElement, system: SystemRef, concept: ConceptDetail): Member {
  const listed = element.concept?.length ? listedDisplays(element).get(concept.code) : undefined;
  return {
    system: system.url,
    ...(system.version ? { version: system.version } : {}),
    code: concept.code,
    display: listed ?? concept.display ?? undefined,
    abstract: concept.abstract,
    inactive: concept.inactive,
    designations: concept.designations,
  };
}

function listedMember(element: ComposeElement, concept: { code: string; display?: string }): Member {
  return { system: element.system!, code: concept.code, display: concept.display, abstract: false, inactive: false, designations: [] };
}

function matchesText(member: Member, filter: string | undefined): boolean {
  if (!filter) return true;
  const needle = filter.toLowerCase();
  return member.code.toLowerCase().includes(needle) || (member.display ?? '').toLowerCase().includes(needle);
}
