import { Lexer, parse, Source, TokenKind, type DocumentNode, type ParseOptions } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Config } from '../config.js';
import { issue, outcome, OperationOutcomeError } from '../fhir/outcome.js';
import { outcomeToGraphQLError } from './errors.js';

/** The size and nesting a GraphQL request may have before anything recursive reads it. */
export interface DocumentLimits {
  readonly maxTokens: number;
  readonly maxNesting: number;
}

const OPENING = new Set<TokenKind>([TokenKind.BRACE_L, TokenKind.BRACKET_L, TokenKind.PAREN_L]);
const CLOSING = new Set<TokenKind>([TokenKind.BRACE_R, TokenKind.BRACKET_R, TokenKind.PAREN_R]);

/**
 * Token count and nesting limits of the query document and its variables. graphql-js parses,
 * validates and coerces by recursion, one level of the stack per level of the document: a query
 * nested 50,000 levels deep (selections, input objects, list literals, or variables) would overflow
 * the stack. The query text is scanned token by token first (graphql's own lexer, in a loop), and
 * the variables walked with an explicit stack, so no check recurses; only then is the text parsed.
 * Parsing happens once per distinct text (yoga caches documents), and so does this scan.
 */
export function useDocumentLimits(config: Config): Plugin {
  const limits: DocumentLimits = { maxTokens: config.graphqlMaxTokens, maxNesting: config.graphqlMaxNesting };
  return {
    onParse({ setParseFn }) {
      setParseFn((source: string | Source, options?: ParseOptions): DocumentNode => {
        checkDocument(typeof source === 'string' ? source : source.body, limits);
        return parse(source, { ...options, maxTokens: limits.maxTokens });
      });
    },
    onParams({ params }) {
      const depth = nestingOf(params.variables, limits.maxNesting);
      if (depth > limits.maxNesting) {
        throw refusal(`The variables are nested more than ${limits.maxNesting} levels deep (objects and lists)`);
      }
    },
  };
}

/** Throws when the text has more tokens or deeper brackets than the limits; a syntax error is left to the parser. */
export function checkDocument(text: string, limits: DocumentLimits): void {
  const lexer = new Lexer(new Source(text));
  let tokens = 0;
  let nesting = 0;
  for (;;) {
    let kind: TokenKind;
    try {
      kind = lexer.advance().kind;
    } catch {
      return;
    }
    if (kind === TokenKind.EOF) return;
    if (++tokens > limits.maxTokens) {
      throw refusal(`The query has more than ${limits.maxTokens} tokens (names, punctuation, values)`);
    }
    if (OPENING.has(kind) && ++nesting > limits.maxNesting) {
      throw refusal(
        `The query is nested more than ${limits.maxNesting} levels deep (selections, arguments, input objects and lists)`,
      );
    }
    if (CLOSING.has(kind)) nesting--;
  }
}

/** Levels of objects and arrays in a JSON value, counted up to just past `max`. */
export function nestingOf(value: unknown, max: number): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!;
    if (typeof item !== 'object' || item === null) continue;
    const level = depth + 1;
    if (level > deepest) deepest = level;
    if (deepest > max) return deepest;
    for (const child of Array.isArray(item) ? item : Object.values(item)) {
      if (typeof child === 'object' && child !== null) stack.push([child, level]);
    }
  }
  return deepest;
}

function refusal(text: string) {
  const error = new OperationOutcomeError(outcome([issue('too-costly', text)]));
  return outcomeToGraphQLError(error, undefined, true);
}
