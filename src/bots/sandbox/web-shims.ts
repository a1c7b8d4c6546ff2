/**
 * Web APIs for the QuickJS sandbox, installed on its global object before anything else of the
 * bots' runtime is evaluated (whatwg-url and @medplum/core read some of them as they load).
 * QuickJS is a bare ECMAScript engine; these are defined over the few host functions the worker
 * installs (`__flint*`, src/bots/sandbox/worker.ts).
 */
declare const __flintCall: (kind: string, request: string) => Promise<string>;
declare const __flintLog: (level: string, text: string) => void;
declare const __flintTimer: (callback: () => void, ms: number) => number;
declare const __flintClearTimer: (id: number) => void;

interface HostResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

const scope = globalThis as Record<string, unknown>;

class TextEncoderShim {
  readonly encoding = 'utf-8';
  encode(text = ''): Uint8Array {
    const utf8 = unescape(encodeURIComponent(text));
    const bytes = new Uint8Array(utf8.length);
    for (let i = 0; i < utf8.length; i++) bytes[i] = utf8.charCodeAt(i);
    return bytes;
  }
}

class TextDecoderShim {
  readonly encoding = 'utf-8';
  decode(input?: ArrayBuffer | ArrayBufferView): string {
    if (!input) return '';
    const bytes = input instanceof ArrayBuffer ? new Uint8Array(input) : new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
    let binary = '';
    for (let i = 0; i < bytes.length; i++) binary += String.fromCharCode(bytes[i]);
    return decodeURIComponent(escape(binary));
  }
}

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

function btoa(binary: string): string {
  let out = '';
  for (let i = 0; i < binary.length; i += 3) {
    const [a, b, c] = [binary.charCodeAt(i), binary.charCodeAt(i + 1), binary.charCodeAt(i + 2)];
    const n = (a << 16) | ((b || 0) << 8) | (c || 0);
    out += BASE64[(n >> 18) & 63] + BASE64[(n >> 12) & 63] + (i + 1 < binary.length ? BASE64[(n >> 6) & 63] : '=') + (i + 2 < binary.length ? BASE64[n & 63] : '=');
  }
  return out;
}

function atob(encoded: string): string {
  const clean = encoded.replace(/[^A-Za-z0-9+/]/g, '');
  let out = '';
  for (let i = 0; i < clean.length; i += 4) {
    const n = [0, 1, 2, 3].reduce((acc, k) => (acc << 6) | Math.max(0, BASE64.indexOf(clean[i + k] ?? 'A')), 0);
    out += String.fromCharCode((n >> 16) & 255);
    if (i + 2 < clean.length) out += String.fromCharCode((n >> 8) & 255);
    if (i + 3 < clean.length) out += String.fromCharCode(n & 255);
  }
  return out;
}

/** Header names are case-insensitive; MedplumClient reads them with `get`. */
class HeadersShim {
  private readonly map = new Map<string, string>();
  constructor(init?: Record<string, string> | [string, string][] | HeadersShim) {
    if (init instanceof HeadersShim) init.forEach((value, name) => this.set(name, value));
    else if (Array.isArray(init)) for (const [name, value] of init) this.set(name, value);
    else if (init) for (const name of Object.keys(init)) this.set(name, init[name]);
  }
  get(name: string): string | null {
    return this.map.get(name.toLowerCase()) ?? null;
  }
  set(name: string, value: string): void {
    this.map.set(name.toLowerCase(), String(value));
  }
  has(name: string): boolean {
    return this.map.has(name.toLowerCase());
  }
  delete(name: string): void {
    this.map.delete(name.toLowerCase());
  }
  forEach(callback: (value: string, name: string) => void): void {
    this.map.forEach((value, name) => callback(value, name));
  }
  entries(): IterableIterator<[string, string]> {
    return this.map.entries();
  }
  toObject(): Record<string, string> {
    const out: Record<string, string> = {};
    this.map.forEach((value, name) => (out[name] = value));
    return out;
  }
}

class ResponseShim {
  readonly headers: HeadersShim;
  readonly ok: boolean;
  readonly status: number;
  readonly statusText = '';
  constructor(private readonly bodyText: string, init: { status: number; headers: Record<string, string> }) {
    this.status = init.status;
    this.ok = init.status >= 200 && init.status < 300;
    this.headers = new HeadersShim(init.headers);
  }
  async text(): Promise<string> {
    return this.bodyText;
  }
  async json(): Promise<unknown> {
    return JSON.parse(this.bodyText);
  }
  async blob(): Promise<{ text(): Promise<string>; type: string }> {
    const body = this.bodyText;
    return { type: this.headers.get('content-type') ?? '', text: async () => body };
  }
  async arrayBuffer(): Promise<ArrayBuffer> {
    return new TextEncoderShim().encode(this.bodyText).buffer as ArrayBuffer;
  }
}

interface FetchOptions {
  method?: string;
  headers?: Record<string, string> | HeadersShim;
  body?: unknown;
}

function bodyText(body: unknown): string | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return body;
  if (body instanceof Uint8Array) return new TextDecoderShim().decode(body);
  if (typeof body === 'object' && body.constructor?.name === 'URLSearchParams') return String(body);
  return JSON.stringify(body);
}

/**
 * Requests below the server's base URL go to the router as the bot's membership; others are
 * outbound fetches, which the host refuses unless the configuration allows them.
 */
export async function fetchShim(input: string | { url: string }, options: FetchOptions = {}): Promise<ResponseShim> {
  const url = typeof input === 'string' ? input : input.url;
  const headers = options.headers instanceof HeadersShim ? options.headers.toObject() : new HeadersShim(options.headers).toObject();
  const request = JSON.stringify({ method: (options.method ?? 'GET').toUpperCase(), url: String(url), headers, body: bodyText(options.body) });
  const answer = JSON.parse(await __flintCall('fetch', request)) as HostResponse;
  return new ResponseShim(answer.body, answer);
}

function formatArgs(args: unknown[]): string {
  return args.map((arg) => (typeof arg === 'string' ? arg : arg instanceof Error ? `${arg.name}: ${arg.message}` : safeJson(arg))).join(' ');
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

function installGlobals(): void {
  scope.TextEncoder = TextEncoderShim;
  scope.TextDecoder = TextDecoderShim;
  scope.btoa = btoa;
  scope.atob = atob;
  scope.Headers = HeadersShim;
  scope.Response = ResponseShim;
  scope.fetch = fetchShim;
  scope.setTimeout = (callback: () => void, ms = 0) => __flintTimer(callback, Number(ms) || 0);
  scope.clearTimeout = (id: number) => __flintClearTimer(id);
  scope.setInterval = () => {
    throw new Error('setInterval is not available to bots');
  };
  scope.queueMicrotask = (callback: () => void) => void Promise.resolve().then(callback);
  scope.console = {
    log: (...args: unknown[]) => __flintLog('info', formatArgs(args)),
    info: (...args: unknown[]) => __flintLog('info', formatArgs(args)),
    debug: (...args: unknown[]) => __flintLog('debug', formatArgs(args)),
    warn: (...args: unknown[]) => __flintLog('warn', formatArgs(args)),
    error: (...args: unknown[]) => __flintLog('error', formatArgs(args)),
  };
}

installGlobals();
