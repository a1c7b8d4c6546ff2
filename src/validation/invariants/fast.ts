import fhirpath from 'fhirpath';
import r4Model from 'fhirpath/fhir-context/r4';

/**
 * A small interpreter over fhirpath.js's own parse tree for the shapes most invariants have
 * (`a.empty() or b.exists()`, `x implies y`, `code = 'value'`): fhirpath.js spends some 20 µs
 * setting up each evaluation, this a fraction of a microsecond. It knows member navigation (with
 * choice types resolved from the R4 model), empty/exists/not/hasValue/count, boolean logic and
 * equality of primitives. Anything else it meets at run time, on values present, throws
 * `FALLBACK` and the caller asks fhirpath.js; on an empty input most functions have a known result,
 * so `component.where(...)` costs nothing when there is no component.
 */

export const FALLBACK = Symbol('fallback to fhirpath.js');

type Collection = readonly unknown[];
type Evaluate = (input: Collection, resource: unknown) => Collection;
export type FastInvariant = (node: unknown, resource: unknown) => Collection;

interface AstNode {
  readonly type: string;
  readonly text?: string;
  readonly children?: readonly AstNode[];
}

/** What a navigation step starts from: a type name, a backbone path, or unknown (choice, %var). */
type TypePath = string | undefined;

interface Model {
  readonly choiceTypePaths: Record<string, string[]>;
  readonly pathsDefinedElsewhere: Record<string, string>;
  readonly path2Type: Record<string, string>;
}

const model = r4Model as unknown as Model;
const UCUM = 'http://unitsofmeasure.org';

/** Functions whose result on an empty input is known without evaluating their arguments. */
const ON_EMPTY: Readonly<Record<string, Collection>> = {
  where: [], select: [], first: [], last: [], tail: [], single: [], distinct: [], ofType: [], as: [],
  intersect: [], exclude: [], children: [], descendants: [], resolve: [], extension: [], trace: [],
  matches: [], startsWith: [], endsWith: [], contains: [], substring: [], length: [], toString: [],
  toInteger: [], is: [], all: [true], exists: [false], isDistinct: [true], count: [0], empty: [true],
  hasValue: [false], not: [], htmlChecks: [], memberOf: [], conformsTo: [],
};

const fallback: Evaluate = () => {
  throw FALLBACK;
};

/** Compiles `expression` for a node of `base` (type or backbone path); undefined when unparsable. */
export function compileFast(expression: string, base: string, resourceType: string | undefined): FastInvariant | undefined {
  let tree: AstNode;
  try {
    tree = fhirpath.parse(expression) as AstNode;
  } catch {
    return undefined;
  }
  const { evaluate } = compileNode(tree, base, resourceType);
  return (node, resource) => evaluate([node], resource);
}

interface Compiled {
  readonly evaluate: Evaluate;
  /** The type the results have, when navigation can go on from them. */
  readonly type: TypePath;
}

const opaque = (evaluate: Evaluate): Compiled => ({ evaluate, type: undefined });

function compileNode(node: AstNode, base: TypePath, resourceType: string | undefined): Compiled {
  const kids = node.children ?? [];
  const child = (index: number): Compiled => compileNode(kids[index] as AstNode, base, resourceType);
  switch (node.type) {
    case 'EntireExpression':
    case 'TermExpression':
    case 'InvocationTerm':
    case 'ParenthesizedTerm':
      return kids.length === 1 ? child(0) : opaque(fallback);
    case 'LiteralTerm':
      return opaque(literal(kids[0]));
    case 'ThisInvocation':
      return { evaluate: (input) => input, type: base };
    case 'ExternalConstantTerm':
      return externalConstant(node, resourceType);
    case 'MemberInvocation':
      return member(node.text ?? '', base, (input) => input);
    case 'InvocationExpression':
      return invocation(child(0), kids[1] as AstNode);
    case 'FunctionInvocation':
      return invocation({ evaluate: (input) => input, type: base }, node);
    case 'OrExpression':
    case 'AndExpression':
    case 'ImpliesExpression':
      return opaque(logic(node.text ?? '', child(0).evaluate, child(1).evaluate));
    case 'EqualityExpression':
      return opaque(equality(node.text ?? '', child(0).evaluate, child(1).evaluate));
    case 'InequalityExpression':
    case 'AdditiveExpression':
      return opaque(node.text === '&' ? fallback : arithmetic(node.text ?? '', child(0).evaluate, child(1).evaluate));
    case 'MultiplicativeExpression':
      return opaque(emptyOperands([child(0).evaluate, child(1).evaluate]));
    case 'TypeExpression':
    case 'IndexerExpression':
    case 'PolarityExpression':
      return opaque(emptyOperands([child(0).evaluate]));
    default:
      return opaque(fallback);
  }
}

/** Operators the interpreter does not compute (*, is, [n]): empty when an operand is empty, else fhirpath.js. */
function emptyOperands(operands: readonly Evaluate[]): Evaluate {
  return (input, resource) => {
    for (const operand of operands) if (operand(input, resource).length === 0) return [];
    throw FALLBACK;
  };
}

function literal(node: AstNode | undefined): Evaluate {
  const text = node?.text ?? '';
  if (node?.type === 'BooleanLiteral') return () => [text === 'true'];
  if (node?.type === 'NumberLiteral' && /^\d+(\.\d+)?$/.test(text)) return () => [Number(text)];
  if (node?.type === 'StringLiteral' && !text.includes('\\')) return () => [text.slice(1, -1)];
  return fallback;
}

function externalConstant(node: AstNode, resourceType: string | undefined): Compiled {
  if (node.text === 'ucum') return opaque(() => [UCUM]);
  if (node.text === 'resource' && resourceType) return { evaluate: (_input, resource) => [resource], type: resourceType };
  return opaque(fallback);
}

function invocation(target: Compiled, step: AstNode): Compiled {
  if (step.type === 'MemberInvocation') return member(step.text ?? '', target.type, target.evaluate);
  if (step.type !== 'FunctionInvocation') return opaque(fallback);
  const functn = step.children?.[0];
  const name = functn?.text ?? '';
  const hasParams = (functn?.children?.length ?? 0) > 1;
  return opaque(functionCall(name, hasParams, target.evaluate));
}

function functionCall(name: string, hasParams: boolean, target: Evaluate): Evaluate {
  const simple = hasParams ? undefined : SIMPLE_FUNCTIONS[name];
  if (simple) return (input, resource) => simple(target(input, resource));
  const onEmpty = ON_EMPTY[name];
  return (input, resource) => {
    if (onEmpty !== undefined && target(input, resource).length === 0) return onEmpty;
    throw FALLBACK;
  };
}

const SIMPLE_FUNCTIONS: Readonly<Record<string, (values: Collection) => Collection>> = {
  empty: (values) => [values.length === 0],
  exists: (values) => [values.length > 0],
  count: (values) => [values.length],
  not: (values) => {
    const value = singletonBoolean(values);
    return value === undefined ? [] : [!value];
  },
  hasValue: (values) => [values.length === 1 && isPrimitive(values[0])],
};

/** Child navigation; the JSON keys come from the model (value[x] is valueQuantity, valueString...). */
function member(name: string, type: TypePath, target: Evaluate): Compiled {
  const step = navigation(type, name);
  if (!step) return opaque(emptyOperands([target]));
  const { keys, next } = step;
  const siblingKeys = keys.map((key) => `_${key}`);
  return {
    type: next,
    evaluate: (input, resource) => {
      const out: unknown[] = [];
      for (const item of target(input, resource)) {
        if (typeof item !== 'object' || item === null) throw FALLBACK;
        const record = item as Record<string, unknown>;
        for (let index = 0; index < keys.length; index++) {
          // A primitive with an id or extensions but no value: fhirpath.js knows how it counts.
          if (record[siblingKeys[index] as string] !== undefined) throw FALLBACK;
          const value = record[keys[index] as string];
          if (Array.isArray(value)) for (const element of value) out.push(element);
          else if (value !== undefined && value !== null) out.push(value);
        }
      }
      return out;
    },
  };
}

function navigation(type: TypePath, name: string): { keys: readonly string[]; next: TypePath } | undefined {
  if (type === undefined) return undefined;
  let path = `${type}.${name}`;
  path = model.pathsDefinedElsewhere[path] ?? path;
  const choices = model.choiceTypePaths[path];
  if (choices) return { keys: choices.map((choice) => name + choice.charAt(0).toUpperCase() + choice.slice(1)), next: undefined };
  const found = model.path2Type[path];
  if (found === undefined) return undefined;
  return { keys: [name], next: found === 'BackboneElement' || found === 'Element' ? path : found };
}

function logic(operator: string, left: Evaluate, right: Evaluate): Evaluate {
  return (input, resource) => {
    const a = singletonBoolean(left(input, resource));
    if (operator === 'or' && a === true) return [true];
    if (operator === 'and' && a === false) return [false];
    if (operator === 'implies' && a === false) return [true];
    const b = singletonBoolean(right(input, resource));
    return combine(operator, a, b);
  };
}

function combine(operator: string, a: boolean | undefined, b: boolean | undefined): Collection {
  switch (operator) {
    case 'or':
      return b === true ? [true] : a === false && b === false ? [false] : [];
    case 'and':
      return b === false ? [false] : a === true && b === true ? [true] : [];
    case 'xor':
      return a === undefined || b === undefined ? [] : [a !== b];
    case 'implies':
      return a === true ? (b === undefined ? [] : [b]) : b === true ? [true] : [];
    default:
      throw FALLBACK;
  }
}

function equality(operator: string, left: Evaluate, right: Evaluate): Evaluate {
  if (operator !== '=' && operator !== '!=') return emptyOperands([left, right]);
  return (input, resource) => {
    const a = left(input, resource);
    const b = right(input, resource);
    if (a.length === 0 || b.length === 0) return [];
    if (a.length !== 1 || b.length !== 1 || !isPrimitive(a[0]) || typeof a[0] !== typeof b[0]) throw FALLBACK;
    return [(a[0] === b[0]) === (operator === '=')];
  };
}

const NUMBER_OPERATORS: Readonly<Record<string, (a: number, b: number) => unknown>> = {
  '+': (a, b) => a + b,
  '-': (a, b) => a - b,
  '<': (a, b) => a < b,
  '<=': (a, b) => a <= b,
  '>': (a, b) => a > b,
  '>=': (a, b) => a >= b,
};

/** + - < <= > >= on two whole numbers (counts, mostly); strings, dates, quantities and decimals go to fhirpath.js. */
function arithmetic(operator: string, left: Evaluate, right: Evaluate): Evaluate {
  const compute = NUMBER_OPERATORS[operator];
  if (!compute) return emptyOperands([left, right]);
  return (input, resource) => {
    const a = left(input, resource);
    const b = right(input, resource);
    if (a.length === 0 || b.length === 0) return [];
    if (a.length !== 1 || b.length !== 1 || !Number.isInteger(a[0]) || !Number.isInteger(b[0])) throw FALLBACK;
    return [compute(a[0] as number, b[0] as number)];
  };
}

function isPrimitive(value: unknown): boolean {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

/** A collection in a boolean context: empty is unknown; one boolean is itself; anything else goes to fhirpath.js. */
function singletonBoolean(values: Collection): boolean | undefined {
  if (values.length === 0) return undefined;
  if (values.length === 1 && typeof values[0] === 'boolean') return values[0];
  throw FALLBACK;
}
