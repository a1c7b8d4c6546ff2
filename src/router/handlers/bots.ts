import type { RequestContext } from '../../operations/context.js';
import { errors } from '../../fhir/outcome.js';
import type { Resource } from '../../fhir/types.js';
import { search, searchServicesFor } from '../../search/service.js';
import type { FhirRequest, FhirResponse, RouteParams } from '../types.js';

const JSON_TYPES = ['application/json', 'application/fhir+json'];
const FORM = 'application/x-www-form-urlencoded';

/**
 * `Bot/[id]/$execute` and `Bot/$execute?identifier=system|value`, POST (the body is the input) or
 * GET (the query parameters are): runs the deployed bot and answers what its handler returned,
 * in that content type. The caller must be able to read the Bot.
 */
export async function botExecuteHandler(req: FhirRequest, { id }: RouteParams, ctx: RequestContext): Promise<FhirResponse> {
  if (!ctx.bots) throw errors.notSupported('Bots are not enabled on this server');
  const bot = id ? await ctx.repo.readResource('Bot', id) : await botByIdentifier(ctx, req.query.get('identifier'));
  const { input, contentType } = req.method === 'GET' ? queryInput(req.query) : await bodyInput(req);
  const answer = await ctx.bots.execute(ctx, { bot, input, contentType });
  return { status: answer.status, headers: { 'Content-Type': answer.contentType }, body: new TextEncoder().encode(answer.body) };
}

async function botByIdentifier(ctx: RequestContext, identifier: string | null): Promise<Resource> {
  if (!identifier) throw errors.invalid('Name the bot: Bot/<id>/$execute, or Bot/$execute?identifier=system|value', 'identifier');
  const result = await search(searchServicesFor(ctx), 'Bot', [['identifier', identifier], ['_count', '2']]);
  const found = result.matches.map((row) => JSON.parse(row.text) as Resource);
  if (found.length === 0) throw errors.notFound(`No Bot has identifier ${identifier}`);
  if (found.length > 1) throw errors.invalid(`Several Bots have identifier ${identifier}: use Bot/<id>/$execute`, 'identifier');
  return found[0];
}

function queryInput(query: URLSearchParams): { input: unknown; contentType: string } {
  const input: Record<string, string> = {};
  for (const [name, value] of query) if (name !== 'identifier' && !name.startsWith('_')) input[name] = value;
  return { input, contentType: 'application/json' };
}

/** JSON and FHIR JSON are parsed, form data becomes an object of its fields, anything else (text, HL7 v2) stays text. */
async function bodyInput(req: FhirRequest): Promise<{ input: unknown; contentType: string }> {
  const contentType = (req.header('content-type') ?? 'application/json').split(';')[0].trim().toLowerCase();
  if (!req.body) return { input: undefined, contentType };
  if (JSON_TYPES.includes(contentType)) return { input: await req.body.json(), contentType };
  const text = await req.body.text();
  if (contentType === FORM) return { input: Object.fromEntries(new URLSearchParams(text)), contentType };
  return { input: text, contentType };
}
