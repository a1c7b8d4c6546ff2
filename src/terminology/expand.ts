import { randomUUID } from 'node:crypto';
import { errors } from '../fhir/outcome.js';
import type { Resource } from '../fhir/types.js';
import { coreOperationDefinition } from '../operations/definition.js';
import type { Operation, OperationRequest } from '../operations/registry.js';
import { requestCache } from './cache.js';
import { designationIn } from './language.js';
import { Membership, type Member } from './membership.js';
import { subjectResource } from './resources.js';
import { findSystem } from './systems.js';

interface ExpandInput {
  url?: string;
  valueSet?: Resource;
  filter?: string;
  offset?: number;
  count?: number;
  excludeNested?: boolean;
  activeOnly?: boolean;
  displayLanguage?: string;
}

interface Contains {
  system: string;
  version?: string;
  code: string;
  display?: string;
  abstract?: true;
  inactive?: true;
  contains?: Contains[];
}

/**
 * ValueSet/$expand (R4): `url` or instance or inline `valueSet`; `filter` (text in code or
 * display), `offset` and `count` page a flat list; an unpaged, unfiltered expansion is nested by
 * the code systems' hierarchy unless `excludeNested` is true. One answer lists at most
 * EXPAND_MAX_CODES codes (config.expandMaxCodes): a larger value set is paged by the client.
 */
export const expandOperation: Operation<ExpandInput, { return: Resource }> = {
  definition: coreOperationDefinition('ValueSet-expand'),
  async handler(input, request) {
    const valueSet = await subjectResource(request, 'ValueSet', input.valueSet, input.url);
    const offset = input.offset ?? 0;
    if (offset < 0) throw errors.invalid('offset must be 0 or more', 'Parameters.parameter');
    const maxCodes = request.ctx.config.expandMaxCodes;
    checkCount(input.count, maxCodes);
    const paged = input.offset !== undefined || input.count !== undefined;
    const membership = new Membership(request.ctx, request.db, { designations: input.displayLanguage !== undefined });
    // Without a count, one code more than the limit is asked for: its presence tells an expansion too large to list.
    const count = input.count ?? maxCodes + 1;
    const { members, total } = await membership.expand(valueSet, { filter: input.filter, offset, count });
    if (members.length > maxCodes) throw tooManyCodes(total, maxCodes);
    const active = input.activeOnly ? members.filter((m) => !m.inactive) : members;
    const listed = input.displayLanguage === undefined ? active : active.map((m) => inLanguage(m, input.displayLanguage!));
    const nest = !paged && !input.filter && input.excludeNested !== true;
    const contains = nest ? await nested(request, listed) : listed.map(toContains);
    const parameter: { name: string; [key: string]: unknown }[] = [];
    if (input.filter !== undefined) parameter.push({ name: 'filter', valueString: input.filter });
    if (input.offset !== undefined) parameter.push({ name: 'offset', valueInteger: offset });
    if (input.count !== undefined) parameter.push({ name: 'count', valueInteger: input.count });
    if (input.displayLanguage !== undefined) parameter.push({ name: 'displayLanguage', valueCode: input.displayLanguage });
    const { compose: _compose, expansion: _expansion, meta: _meta, text: _text, ...rest } = valueSet;
    return {
      return: {
        ...rest,
        expansion: {
          identifier: `urn:uuid:${randomUUID()}`,
          timestamp: new Date().toISOString(),
          total,
          ...(paged ? { offset } : {}),
          ...(parameter.length > 0 ? { parameter } : {}),
          ...(contains.length > 0 ? { contains } : {}),
        },
      },
    };
  },
};

function checkCount(count: number | undefined, maxCodes: number): void {
  if (count === undefined) return;
  if (count < 0) throw errors.invalid('count must be 0 or more', 'Parameters.parameter');
  if (count > maxCodes) {
    throw errors.tooCostly(`count ${count} is more than the ${maxCodes} codes one expansion may list: page with a smaller count and offset`, 'Parameters.parameter');
  }
}

function tooManyCodes(total: number, maxCodes: number) {
  return errors.tooCostly(
    `The expansion has ${total} codes, more than the ${maxCodes} one answer may list: page it with offset and count (at most ${maxCodes}), or narrow it with filter`,
  );
}

/** The member with its display in `language` where the code system has a designation in it. */
function inLanguage(member: Member, language: string): Member {
  const display = designationIn(language, member.designations);
  return display === undefined ? member : { ...member, display };
}

function toContains(member: Member): Contains {
  return {
    system: member.system,
    ...(member.version ? { version: member.version } : {}),
    code: member.code,
    ...(member.display !== undefined ? { display: member.display } : {}),
    ...(member.abstract ? { abstract: true as const } : {}),
    ...(member.inactive ? { inactive: true as const } : {}),
  };
}

/**
 * Levels of nesting an expansion may have. Serialising (JSON, GraphQL) recurses per level, and a
 * code system may be a chain of thousands of codes: an expansion whose hierarchy is deeper is
 * listed flat, as with excludeNested.
 */
export const MAX_NESTED_LEVELS = 100;

/** Nests each member under its nearest parent that is also a member (same system). */
async function nested(request: Parameters<Operation['handler']>[1], members: Member[]): Promise<Contains[]> {
  const parentOf = await memberParents(request, members);
  const nodes = new Map(members.map((m) => [`${m.system}|${m.code}`, toContains(m)]));
  const attachedTo = new Map<Contains, Contains>();
  const roots: Contains[] = [];
  for (const member of members) {
    const key = `${member.system}|${member.code}`;
    const parent = parentOf.get(key);
    const node = nodes.get(key)!;
    const parentNode = parent !== undefined ? nodes.get(`${member.system}|${parent}`) : undefined;
    const levelsAbove = parentNode ? levelsUpTo(node, parentNode, attachedTo) : 0;
    if (levelsAbove > MAX_NESTED_LEVELS) return members.map(toContains);
    if (parentNode && levelsAbove > 0) {
      (parentNode.contains ??= []).push(node);
      attachedTo.set(node, parentNode);
    } else roots.push(node);
  }
  return deepestLevel(roots) > MAX_NESTED_LEVELS ? members.map(toContains) : roots;
}

/** Each member's parent among the members (`system|code` → parent code). */
async function memberParents(request: OperationRequest, members: Member[]): Promise<Map<string, string>> {
  const bySystem = new Map<string, Member[]>();
  for (const member of members) {
    const list = bySystem.get(member.system);
    if (list) list.push(member);
    else bySystem.set(member.system, [member]);
  }
  const parentOf = new Map<string, string>();
  for (const [url, list] of bySystem) {
    const system = await findSystem(request.ctx, request.db, url, list[0].version);
    if (!system) continue;
    const codes = new Set(list.map((m) => m.code));
    // Parent links in parent order, from memory when the system is held there.
    for (const row of await parentLinks(request, system.id, codes)) {
      if (codes.has(row.parent) && !parentOf.has(`${url}|${row.child}`)) parentOf.set(`${url}|${row.child}`, row.parent);
    }
  }
  return parentOf;
}

/**
 * Levels from `parent` up to its root, plus one, walking the nodes attached so far; 0 when `node`
 * is among them (attaching it would make a cycle, in a malformed hierarchy). Stops past the limit.
 */
function levelsUpTo(node: Contains, parent: Contains, attachedTo: ReadonlyMap<Contains, Contains>): number {
  let levels = 1;
  for (let current: Contains | undefined = parent; current; current = attachedTo.get(current)) {
    if (current === node) return 0;
    if (++levels > MAX_NESTED_LEVELS) return levels;
  }
  return levels;
}

/** Levels of the nested list (1 for a flat one), walked without recursion. */
function deepestLevel(roots: Contains[]): number {
  let deepest = 0;
  const stack: [Contains, number][] = roots.map((root) => [root, 1]);
  while (stack.length > 0) {
    const [node, level] = stack.pop()!;
    deepest = Math.max(deepest, level);
    for (const child of node.contains ?? []) stack.push([child, level + 1]);
  }
  return deepest;
}

async function parentLinks(request: OperationRequest, systemId: string, codes: Set<string>): Promise<{ parent: string; child: string }[]> {
  const cache = await requestCache(request.ctx, request.db);
  const loaded = cache && (await cache.system(systemId));
  if (loaded) {
    const links: { parent: string; child: string }[] = [];
    // parentsOf lists each child's parents in the database's order of parent, as the query below.
    for (const child of codes) for (const parent of loaded.parentsOf.get(child) ?? []) links.push({ parent, child });
    return links;
  }
  return request.db.query<{ parent: string; child: string }>(
    `SELECT parent, child FROM terminology_hierarchy WHERE "systemId" = $1::uuid AND child = ANY($2::text[]) ORDER BY parent`,
    [systemId, [...codes]],
  );
}
