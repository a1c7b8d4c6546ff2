/** WHATWG URL for the sandbox (QuickJS has none): a well-kept pure-JavaScript implementation. */
import { URL, URLSearchParams } from 'whatwg-url';

const scope = globalThis as Record<string, unknown>;
scope.URL = URL;
scope.URLSearchParams = URLSearchParams;
