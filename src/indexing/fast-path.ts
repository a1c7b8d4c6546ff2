import { childBranches, isTypeOf, resourceSlot, type Slot } from './element-types.js';
import { referencedType } from './references.js';
import type { TypedValue } from './typed-value.js';

/**
 * A small evaluator for the FHIRPath subset that makes up almost every search parameter
 * expression, compiled per resource type with all element types resolved up front:
 *
 *   expr   := term ('|' term)*
 *   term   := (path | '(' expr ')') ('.' step)* ['as' Type]
 *   path   := (ResourceType | 'Resource' | 'DomainResource' | element) ('.' step)*
 *   step   := element | as(Type) | ofType(Type) | where(element = 'text') | where(resolve() is Type)
 *
 * fhirpath.js costs far more per expression even compiled (measured: see bench/RESULTS.md); this
 * costs a few property reads. Anything outside the subset makes `compileFastPath` return undefined
 * and the caller uses fhirpath.js. Where fhirpath.js throws (`as` on several values), this
 * evaluator filters instead.
 */

/** A value with the slot it was read from, so that further steps can be compiled against it. */
export interface Node extends TypedValue {
  slot: Slot;
}

type Step = (nodes: Node[]) => Node[];

interface Compiled {
  run: Step;
  slots: Slot[];
}

type Token = { kind: 'name' | 'string' | 'symbol'; text: string };

class Unsupported extends Error {}

const TOKEN = /\s*(?:([A-Za-z_][A-Za-z0-9_]*)|`([^`]*)`|'((?:[^'\\]|\\.)*)'|([.()|=]))/y;

function tokenize(expression: string): Token[] {
  const tokens: Token[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < expression.length) {
    if (/^\s*$/.test(expression.slice(TOKEN.lastIndex))) break;
    const match = TOKEN.exec(expression);
    if (!match) throw new Unsupported(expression);
    if (match[1] !== undefined || match[2] !== undefined) tokens.push({ kind: 'name', text: match[1] ?? match[2] });
    else if (match[3] !== undefined) tokens.push({ kind: 'string', text: unescapeString(match[3]) });
    else tokens.push({ kind: 'symbol', text: match[4] });
  }
  return tokens;
}

const ESCAPES: Record<string, string> = { n: '\n', r: '\r', t: '\t', f: '\f' };

function unescapeString(text: string): string {
  return text.replace(/\\(u[0-9a-fA-F]{4}|.)/g, (_, code: string) =>
    code.length === 5 ? String.fromCharCode(parseInt(code.slice(1), 16)) : (ESCAPES[code] ?? code),
  );
}

/** Recursive-descent compiler: parses and resolves types in one pass. */
class Compiler {
  private position = 0;

  constructor(
    private readonly tokens: Token[],
    private readonly resourceType: string,
    /** Slots of the nodes the expression starts from: the resource's root unless given. */
    private readonly input?: Slot[],
  ) {}

  compile(): Compiled {
    const result = this.union(this.input ?? [resourceSlot(this.resourceType)]);
    if (this.position !== this.tokens.length) throw new Unsupported('trailing tokens');
    return result;
  }

  private peek(text?: string): Token | undefined {
    const token = this.tokens[this.position];
    // A string literal never stands for a symbol or keyword.
    return token && token.kind !== 'string' && (text === undefined || token.text === text) ? token : undefined;
  }

  private take(text?: string, kind?: Token['kind']): Token {
    const token = this.tokens[this.position];
    if (!token || (text !== undefined && token.text !== text) || (kind && token.kind !== kind)) {
      throw new Unsupported(`expected ${text ?? kind}`);
    }
    this.position++;
    return token;
  }

  private union(input: Slot[]): Compiled {
    const terms = [this.term(input)];
    while (this.peek('|')) {
      this.take('|');
      terms.push(this.term(input));
    }
    return terms.length === 1 ? terms[0] : unionOf(terms);
  }

  private term(input: Slot[]): Compiled {
    let current = this.primary(input);
    while (this.peek('.')) {
      this.take('.');
      current = this.step(current);
    }
    if (this.peek('as')) {
      this.take('as');
      current = ofType(current, this.typeName());
    }
    return current;
  }

  private primary(input: Slot[]): Compiled {
    if (this.peek('(')) {
      this.take('(');
      const inner = this.union(input);
      this.take(')');
      return inner;
    }
    const name = this.take(undefined, 'name').text;
    const root = { run: (nodes: Node[]) => nodes, slots: input };
    if (name === this.resourceType || name === 'Resource' || name === 'DomainResource') return root;
    // Another type name would be a type filter on the root: never true, and not worth supporting.
    if (/^[A-Z]/.test(name) || this.peek('(')) throw new Unsupported(name);
    return child(root, name);
  }

  private step(current: Compiled): Compiled {
    const name = this.take(undefined, 'name').text;
    if (!this.peek('(')) return child(current, name);
    this.take('(');
    let result: Compiled;
    if (name === 'as' || name === 'ofType') result = ofType(current, this.typeName());
    else if (name === 'where') result = this.where(current);
    else throw new Unsupported(name);
    this.take(')');
    return result;
  }

  private where(current: Compiled): Compiled {
    if (this.peek('resolve')) {
      this.take('resolve');
      this.take('(');
      this.take(')');
      this.take('is');
      return whereReferenceIs(current, this.typeName());
    }
    const field = this.take(undefined, 'name').text;
    this.take('=');
    return whereEquals(current, field, this.take(undefined, 'string').text);
  }

  private typeName(): string {
    const name = this.take(undefined, 'name').text;
    if (name !== 'FHIR' || !this.peek('.')) return name;
    this.take('.');
    return this.take(undefined, 'name').text;
  }
}

function unionOf(terms: Compiled[]): Compiled {
  const runs = terms.map((term) => term.run);
  return {
    run: (nodes) => runs.flatMap((run) => run(nodes)),
    slots: [...new Set(terms.flatMap((term) => term.slots))],
  };
}

function child(current: Compiled, name: string): Compiled {
  const bySlot = new Map(current.slots.map((slot) => [slot, childBranches(slot, name)]));
  const previous = current.run;
  return {
    run: (nodes) => {
      const out: Node[] = [];
      for (const node of previous(nodes)) {
        const branches = bySlot.get(node.slot);
        const value = node.value;
        if (!branches || typeof value !== 'object' || value === null || Array.isArray(value)) continue;
        for (const branch of branches) pushValues(out, (value as Record<string, unknown>)[branch.prop], branch.slot);
      }
      return out;
    },
    slots: [...new Set([...bySlot.values()].flat().map((branch) => branch.slot))],
  };
}

function pushValues(out: Node[], value: unknown, slot: Slot): void {
  if (value === undefined || value === null) return;
  const type = slot.type || undefined;
  if (!Array.isArray(value)) {
    out.push({ value, type, slot });
    return;
  }
  // Arrays of primitives hold null where only an extension (`_given`) is present.
  for (const item of value) if (item !== null && item !== undefined) out.push({ value: item, type, slot });
}

function ofType(current: Compiled, type: string): Compiled {
  const allowed = new Set(current.slots.filter((slot) => slot.type !== '' && isTypeOf(slot.type, type)));
  return filter({ ...current, slots: [...allowed] }, current.run, (node) => allowed.has(node.slot));
}

function whereEquals(current: Compiled, field: string, text: string): Compiled {
  return filter(current, current.run, (node) => (node.value as Record<string, unknown>)?.[field] === text);
}

function whereReferenceIs(current: Compiled, type: string): Compiled {
  return filter(current, current.run, (node) => referencedType(node.value) === type);
}

function filter(current: Compiled, previous: Step, keep: (node: Node) => boolean): Compiled {
  return { run: (nodes) => previous(nodes).filter(keep), slots: current.slots };
}

export type Evaluator = (resource: object) => TypedValue[];

/** A compiled evaluator for `expression` on resources of `resourceType`, or undefined if unsupported. */
export function compileFastPath(expression: string, resourceType: string): Evaluator | undefined {
  let compiled: Compiled;
  try {
    compiled = new Compiler(tokenize(expression), resourceType).compile();
  } catch (error) {
    if (error instanceof Unsupported) return undefined;
    throw error;
  }
  const root = resourceSlot(resourceType);
  const run = compiled.run;
  return (resource) => run([{ value: resource, type: resourceType, slot: root }]);
}

/**
 * A compiled path over nodes rather than a whole resource: composite parameters evaluate their
 * element expression (`Observation.component`) to nodes, then each component (`code`,
 * `value.as(Quantity)`) relative to those nodes.
 */
export interface NodePath {
  run: (nodes: Node[]) => Node[];
  /** Slots the results can have (the input of paths compiled relative to these results). */
  slots: Slot[];
}

/**
 * `expression` compiled to start from nodes in `input` slots (the root of a `resourceType` resource
 * when not given), or undefined when outside the fast-path subset.
 */
export function compileNodePath(expression: string, resourceType: string, input?: Slot[]): NodePath | undefined {
  try {
    return new Compiler(tokenize(expression), resourceType, input).compile();
  } catch (error) {
    if (error instanceof Unsupported) return undefined;
    throw error;
  }
}

/** The root node of a resource, the input of paths compiled without `input`. */
export function rootNode(resource: object, resourceType: string): Node {
  return { value: resource, type: resourceType, slot: resourceSlot(resourceType) };
}
