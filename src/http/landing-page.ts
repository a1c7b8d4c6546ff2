import { SERVER_NAME, SERVER_VERSION } from '../fhir/software.js';
import { parseAccept } from '../router/negotiation.js';
import type { HonoContext } from './route.js';
import { requestHeader } from '../graphql/http-body.js';

/** What `GET /` names: where a newcomer (or an API client) goes next. */
export interface ServerDirectory {
  readonly name: string;
  readonly version: string;
  readonly fhirBase: string;
  readonly capabilityStatement: string;
  readonly graphql: string;
  readonly smartConfiguration: string;
  readonly healthcheck: string;
  readonly documentation: string;
}

/** The links are absolute, from BASE_URL, so they hold behind a proxy that rewrites the host. */
export function serverDirectory(baseUrl: string, fhirBaseUrl: string): ServerDirectory {
  return {
    name: SERVER_NAME,
    version: SERVER_VERSION,
    fhirBase: fhirBaseUrl,
    capabilityStatement: `${fhirBaseUrl}/metadata`,
    graphql: `${baseUrl}graphql`,
    smartConfiguration: `${baseUrl}.well-known/smart-configuration`,
    healthcheck: `${baseUrl}healthcheck`,
    documentation: 'https://hl7.org/fhir/R4/http.html',
  };
}

/**
 * `GET /`: a small HTML page for browsers (an Accept that prefers text/html), JSON for everyone
 * else, so API clients and monitoring can read the same facts.
 */
export async function landingPageHandler(c: HonoContext): Promise<Response> {
  const { baseUrl, fhirBaseUrl } = c.get('services').config;
  const directory = serverDirectory(baseUrl, fhirBaseUrl);
  if (prefersHtml(requestHeader(c, 'accept'))) {
    return new Response(landingHtml(directory), { headers: { 'Content-Type': 'text/html; charset=utf-8' } });
  }
  return Response.json(directory);
}

function prefersHtml(accept: string | undefined): boolean {
  const ranges = parseAccept(accept);
  const quality = (type: string) => Math.max(0, ...ranges.filter((r) => r.type === type).map((r) => r.q));
  const html = quality('text/html');
  return html > 0 && html >= Math.max(quality('application/json'), quality('application/fhir+json'));
}

function landingHtml(d: ServerDirectory): string {
  const link = (href: string, text = href) => `<a href="${escapeHtml(href)}">${escapeHtml(text)}</a>`;
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>${escapeHtml(d.name)} ${escapeHtml(d.version)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:44rem;margin:3rem auto;padding:0 1rem;line-height:1.5}dt{font-weight:600;margin-top:.8rem}code{background:#f2f2f2;padding:0 .2rem}</style>
</head>
<body>
<h1>${escapeHtml(d.name)} <small>${escapeHtml(d.version)}</small></h1>
<p>A FHIR R4 server with REST and GraphQL. Every FHIR and GraphQL request needs <code>Authorization: Bearer &lt;token&gt;</code>.</p>
<dl>
<dt>FHIR base</dt><dd>${link(d.fhirBase)}</dd>
<dt>CapabilityStatement</dt><dd>${link(d.capabilityStatement)}</dd>
<dt>GraphQL (GraphiQL in a browser)</dt><dd>${link(d.graphql)}</dd>
<dt>SMART configuration</dt><dd>${link(d.smartConfiguration)}</dd>
<dt>Health</dt><dd>${link(d.healthcheck)}</dd>
<dt>FHIR R4 RESTful API</dt><dd>${link(d.documentation)}</dd>
</dl>
</body>
</html>
`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}
