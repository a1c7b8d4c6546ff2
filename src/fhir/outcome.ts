import type { IssueType } from './resources.js';
import type { OperationOutcome, OperationOutcomeIssue } from './types.js';

/** FHIR issue codes (http://hl7.org/fhir/issue-type) and the HTTP status each maps to by default. */
const STATUS_BY_ISSUE_CODE: Partial<Record<IssueType, number>> = {
  invalid: 400,
  structure: 400,
  required: 400,
  value: 400,
  invariant: 400,
  processing: 400,
  'too-long': 413,
  security: 403,
  login: 401,
  unknown: 401,
  expired: 401,
  forbidden: 403,
  suppressed: 403,
  'not-supported': 404,
  'not-found': 404,
  deleted: 410,
  duplicate: 409,
  conflict: 409,
  'too-costly': 400,
  throttled: 429,
  timeout: 504,
  transient: 503,
  exception: 500,
};

/** The one error type of the server: it carries the OperationOutcome clients receive. */
export class OperationOutcomeError extends Error {
  readonly status: number;
  readonly headers: Record<string, string>;

  constructor(
    readonly outcome: OperationOutcome,
    status?: number,
    headers: Record<string, string> = {},
  ) {
    super(outcome.issue.map((issue) => issue.details?.text ?? issue.code).join('; '));
    this.status = status ?? STATUS_BY_ISSUE_CODE[outcome.issue[0]?.code ?? 'exception'] ?? 400;
    this.headers = headers;
  }
}

export function outcome(issues: OperationOutcomeIssue[]): OperationOutcome {
  return { resourceType: 'OperationOutcome', issue: issues };
}

export function issue(code: IssueType, text: string, expression?: string | string[]): OperationOutcomeIssue {
  const result: OperationOutcomeIssue = { severity: 'error', code, details: { text } };
  if (expression !== undefined) result.expression = Array.isArray(expression) ? expression : [expression];
  return result;
}

export function allOk(text = 'All OK'): OperationOutcome {
  return outcome([{ severity: 'information', code: 'informational', details: { text } }]);
}

function fail(code: IssueType, text: string, status?: number, expression?: string | string[]): OperationOutcomeError {
  return new OperationOutcomeError(outcome([issue(code, text, expression)]), status);
}

export const errors = {
  invalid: (text: string, expression?: string | string[]) => fail('invalid', text, 400, expression),
  notFound: (text = 'Not found') => fail('not-found', text, 404),
  notSupported: (text: string) => fail('not-supported', text, 404),
  gone: (text = 'Deleted') => fail('deleted', text, 410),
  conflict: (text: string) => fail('conflict', text, 409),
  preconditionFailed: (text: string) => fail('conflict', text, 412),
  methodNotAllowed: (text: string, allow: string) =>
    new OperationOutcomeError(outcome([issue('not-supported', text)]), 405, { Allow: allow }),
  unsupportedMediaType: (text: string) => fail('not-supported', text, 415),
  notAcceptable: (text: string) => fail('not-supported', text, 406),
  tooLarge: (text: string, expression?: string | string[]) => fail('too-long', text, 413, expression),
  tooCostly: (text: string, expression?: string | string[]) => fail('too-costly', text, 400, expression),
  forbidden: (text = 'Forbidden', expression?: string | string[]) => fail('forbidden', text, 403, expression),
  /** 503 with `Retry-After` (seconds): the server could not do the work now, a later retry may succeed. */
  unavailable: (code: 'timeout' | 'transient' | 'throttled', text: string, retryAfterSeconds: number) =>
    new OperationOutcomeError(outcome([issue(code, text)]), 503, { 'Retry-After': String(retryAfterSeconds) }),
  /** 499 (the status proxies log for it): the client closed its connection before its answer; nobody reads this one. */
  clientClosed: (text: string) => fail('transient', text, 499),
  unauthorized: (text = 'Unauthorized') =>
    new OperationOutcomeError(outcome([issue('login', text)]), 401, { 'WWW-Authenticate': 'Bearer' }),
};

/** Turns anything thrown into a client-safe OperationOutcome error; unknown errors hide their cause. */
export function toOperationOutcomeError(error: unknown): OperationOutcomeError {
  if (error instanceof OperationOutcomeError) return error;
  return fail('exception', 'Internal server error', 500);
}
