import { randomUUID } from 'node:crypto';
import { stdTimeFunctions, symbols, type Logger } from 'pino';

const REQUEST_ID = /^[A-Za-z0-9._\-]{1,100}$/;

/** The client's X-Request-Id when it is a sensible token, else a new one. */
export function requestIdOf(incoming: string | undefined): string {
  return incoming && REQUEST_ID.test(incoming) ? incoming : randomUUID();
}

/** The one structured log line of a request: id, method, path, status, duration. */
export function logRequest(log: Logger, requestId: string, method: string, path: string, status: number, started: number): void {
  const hundredths = Math.round((performance.now() - started) * 100);
  const line = lineWriterOf(log);
  if (line && PLAIN_TEXT.test(requestId) && PLAIN_TEXT.test(method) && PLAIN_TEXT.test(path)) {
    if (log.isLevelEnabled('info')) line.write(requestId, method, path, status, hundredthsText(hundredths));
    return;
  }
  log.info({ reqId: requestId, method, path, status, ms: hundredths / 100 }, 'request');
}

/**
 * `hundredths / 100` as JSON writes that number (`12`, `12.5`, `12.05`), from whole numbers: V8
 * turns a fraction into text by its slow general conversion, which showed in profiles of reads.
 */
export function hundredthsText(hundredths: number): string {
  if (!Number.isSafeInteger(hundredths) || hundredths < 0) return String(hundredths / 100);
  const whole = Math.floor(hundredths / 100);
  const part = hundredths % 100;
  if (part === 0) return `${whole}`;
  return part % 10 === 0 ? `${whole}.${part / 10}` : `${whole}.${part < 10 ? '0' : ''}${part}`;
}

/** Printable ASCII without quote or backslash: pino writes such a string between quotes as it is. */
const PLAIN_TEXT = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** Pino's own pieces of a line: level prefix, time, bindings, end, and where lines go. */
interface PinoParts {
  [key: symbol]: unknown;
}

/**
 * The request line written as pino writes `log.info({reqId, method, path, status, ms}, 'request')`
 * (same level prefix, time, bindings, field order and end, to the logger's own stream), without
 * pino's generic walk of the object: the line is written once per request, so its formatting
 * showed in profiles of small requests. Only for loggers whose line nothing else shapes (no mixin,
 * formatter, hook, serializer, redaction, nesting, message prefix, or a stream that wants the
 * line's parts): any other logger gets `log.info`.
 */
class RequestLineWriter {
  constructor(private readonly log: PinoParts) {}

  write(requestId: string, method: string, path: string, status: number, ms: string): void {
    const log = this.log;
    const timeOf = log[symbols.timeSym] as () => string;
    const time = timeOf === stdTimeFunctions.epochTime ? epochTime() : timeOf();
    const prefix = (log[symbols.lsCacheSym] as Record<number, string>)[30];
    const stream = log[symbols.streamSym] as { write(line: string): unknown };
    stream.write(
      `${prefix}${time}${log[symbols.chindingsSym] as string},"reqId":"${requestId}","method":"${method}","path":"${path}","status":${status},"ms":${ms},"msg":"request"${log[symbols.endSym] as string}`,
    );
  }
}

/**
 * pino's default time field, the text made once per millisecond: the lines of one millisecond
 * share it (a number this large becomes text by V8's slow conversion).
 */
function epochTime(): string {
  const now = Date.now();
  if (now !== lastEpoch.ms) lastEpoch = { ms: now, text: `,"time":${now}` };
  return lastEpoch.text;
}

let lastEpoch = { ms: -1, text: '' };

const writers = new WeakMap<Logger, RequestLineWriter | null>();

function lineWriterOf(log: Logger): RequestLineWriter | null {
  let writer = writers.get(log);
  if (writer === undefined) {
    writer = writesPlainLines(log as unknown as PinoParts) ? new RequestLineWriter(log as unknown as PinoParts) : null;
    writers.set(log, writer);
  }
  return writer;
}

const FIELDS = ['reqId', 'method', 'path', 'status', 'ms', 'msg'];

function writesPlainLines(log: PinoParts): boolean {
  const formatters = log[symbols.formattersSym] as { log?: unknown } | undefined;
  const hooks = log[symbols.hooksSym] as { logMethod?: unknown; streamWrite?: unknown } | undefined;
  const serializers = log[symbols.serializersSym] as Record<string, unknown> | undefined;
  const stringifiers = log[symbols.stringifiersSym] as Record<string | symbol, unknown> | undefined;
  const stream = log[symbols.streamSym] as { write?: unknown; [key: symbol]: unknown } | undefined;
  const levels = log[symbols.lsCacheSym] as Record<number, unknown> | undefined;
  return (
    formatters !== undefined &&
    formatters.log === undefined &&
    hooks !== undefined &&
    hooks.logMethod === undefined &&
    hooks.streamWrite === undefined &&
    log[symbols.mixinSym] === undefined &&
    !log[symbols.nestedKeySym] &&
    !log[(symbols as unknown as Record<string, symbol>).msgPrefixSym] &&
    log[symbols.messageKeySym] === 'msg' &&
    typeof log[symbols.timeSym] === 'function' &&
    typeof log[symbols.chindingsSym] === 'string' &&
    typeof log[symbols.endSym] === 'string' &&
    levels !== undefined &&
    levels[30] === '{"level":30' &&
    serializers !== undefined &&
    stringifiers !== undefined &&
    stringifiers[symbols.wildcardFirstSym] === undefined &&
    FIELDS.every((field) => serializers[field] === undefined && stringifiers[field] === undefined) &&
    stream !== undefined &&
    typeof stream.write === 'function' &&
    stream[symbols.needsMetadataGsym] !== true
  );
}
