import { errors, type OperationOutcomeError } from '../../fhir/outcome.js';

/**
 * The parser of `_filter` (http://hl7.org/fhir/R4/search_filter.html): comparisons
 * `path op value` joined by `and`/`or`, negated by `not (...)`, grouped by parentheses. `and`
 * binds tighter than `or` (the grammar leaves mixing them unspecified; this is the usual
 * reading, and Medplum's). Written here rather than taken from `@medplum/core`'s
 * parseFilterParameter, which has no `ew`, silently drops text after the first comparison
 * (`gender eq male junk`), misreads `[...]` paths, and reports no position.
 */

export const FILTER_OPERATORS = ['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'lt', 'ge', 'le', 'ap', 'sa', 'eb', 'pr', 'po', 'ss', 'sb', 'in', 'ni', 're'] as const;
export type FilterOperator = (typeof FILTER_OPERATORS)[number];

export type FilterExpression =
  | { readonly kind: 'compare'; readonly path: string; readonly operator: FilterOperator; readonly value: string; readonly at: number }
  | { readonly kind: 'not'; readonly child: FilterExpression }
  | { readonly kind: 'and' | 'or'; readonly children: readonly FilterExpression[] };

/** Nesting of parentheses and `not` allowed: deeper is refused rather than recursed into. */
const MAX_NESTING = 32;

export function parseFilter(text: string): FilterExpression {
  const parser = new FilterParser(text);
  const expression = parser.expression(0);
  parser.skipSpace();
  if (!parser.atEnd()) throw parser.fail('expected "and", "or" or the end of the filter');
  return expression;
}

class FilterParser {
  private pos = 0;

  constructor(private readonly text: string) {}

  atEnd(): boolean {
    return this.pos >= this.text.length;
  }

  skipSpace(): void {
    while (!this.atEnd() && /\s/.test(this.text[this.pos])) this.pos++;
  }

  fail(what: string, at = this.pos): OperationOutcomeError {
    const shown = this.text.slice(at, at + 20);
    return errors.invalid(`Invalid _filter at character ${at + 1}${shown ? ` ("${shown}")` : ' (its end)'}: ${what}`, '_filter');
  }

  expression(depth: number): FilterExpression {
    if (depth > MAX_NESTING) throw this.fail(`more than ${MAX_NESTING} levels of parentheses`);
    return this.joined('or', () => this.joined('and', () => this.unary(depth)));
  }

  /** Operands separated by the keyword `keyword`, as one node when there are several. */
  private joined(keyword: 'and' | 'or', operand: () => FilterExpression): FilterExpression {
    const children = [operand()];
    while (this.keyword(keyword)) children.push(operand());
    return children.length === 1 ? children[0] : { kind: keyword, children };
  }

  private unary(depth: number): FilterExpression {
    this.skipSpace();
    if (this.keyword('not')) {
      this.skipSpace();
      if (this.text[this.pos] !== '(') throw this.fail('expected "(" after "not"');
      return { kind: 'not', child: this.group(depth) };
    }
    if (this.text[this.pos] === '(') return this.group(depth);
    return this.comparison();
  }

  private group(depth: number): FilterExpression {
    this.pos++;
    const inner = this.expression(depth + 1);
    this.skipSpace();
    if (this.text[this.pos] !== ')') throw this.fail('expected ")"');
    this.pos++;
    return inner;
  }

  /** Consumes `word` followed by a space or a parenthesis; false (consuming nothing) otherwise. */
  private keyword(word: string): boolean {
    const start = this.pos;
    this.skipSpace();
    const end = this.pos + word.length;
    if (this.text.slice(this.pos, end).toLowerCase() === word && (end === this.text.length || /[\s(]/.test(this.text[end]))) {
      this.pos = end;
      return true;
    }
    this.pos = start;
    return false;
  }

  private comparison(): FilterExpression {
    const at = this.pos;
    const path = /^[A-Za-z_][A-Za-z0-9_.:-]*/.exec(this.text.slice(this.pos))?.[0];
    if (!path) throw this.fail('expected a search parameter name');
    this.pos += path.length;
    if (this.text[this.pos] === '[') throw this.fail('filters on a path ("[...]") are not supported');
    this.skipSpace();
    const operator = /^[a-z]{2}(?=\s|$)/i.exec(this.text.slice(this.pos))?.[0].toLowerCase();
    if (!operator || !(FILTER_OPERATORS as readonly string[]).includes(operator)) {
      throw this.fail(`expected an operator (${FILTER_OPERATORS.join(', ')})`);
    }
    this.pos += 2;
    this.skipSpace();
    return { kind: 'compare', path, operator: operator as FilterOperator, value: this.value(), at };
  }

  /** A quoted string (`\"` and `\\` escaped) or the text up to the next space or `)`. */
  private value(): string {
    if (this.text[this.pos] !== '"') {
      const token = /^[^\s()"]+/.exec(this.text.slice(this.pos))?.[0];
      if (!token) throw this.fail('expected a value');
      this.pos += token.length;
      return token;
    }
    const start = this.pos;
    let value = '';
    for (this.pos++; this.pos < this.text.length; this.pos++) {
      const char = this.text[this.pos];
      if (char === '"') {
        this.pos++;
        return value;
      }
      if (char === '\\') this.pos++;
      value += this.text[this.pos] ?? '';
    }
    throw this.fail('unterminated quoted value', start);
  }
}
