import { OperationOutcomeError, errors } from '../fhir/outcome.js';
import { isRecord, type OperationOutcome, type Resource } from '../fhir/types.js';
import type { OperationDefinition, OperationLevel } from '../operations/definition.js';
import { outParameters, type OperationInput } from '../operations/parameters.js';
import type { Operation, OperationRequest } from '../operations/registry.js';
import type { RequestContext } from '../operations/context.js';
import { search, searchServicesFor } from '../search/service.js';

/** Medplum's extension naming the Bot that implements a stored OperationDefinition. */
export const IMPLEMENTATION_EXTENSION = 'https://medplum.com/fhir/StructureDefinition/operationDefinition-implementation';

interface Extension {
  url?: string;
  valueReference?: { reference?: string };
}

/**
 * A custom operation of the caller's project: an OperationDefinition stored there with `code` and
 * the implementation extension naming a Bot, available at the levels (and on the types) it lists.
 * Undefined when there is none, so the caller answers 404 as for any unknown operation.
 */
export async function findBotOperation(ctx: RequestContext, code: string, level: OperationLevel, resourceType?: string): Promise<Operation | undefined> {
  const result = await search(searchServicesFor(ctx), 'OperationDefinition', [['code', code], ['_count', '20']]);
  for (const row of result.matches) {
    const stored = JSON.parse(row.text) as OperationDefinition & { extension?: Extension[] };
    const bot = stored.extension?.find((extension) => extension.url === IMPLEMENTATION_EXTENSION)?.valueReference?.reference;
    if (!bot?.startsWith('Bot/') || stored.code !== code || !appliesAt(stored, level, resourceType)) continue;
    return botOperation(stored, bot.slice('Bot/'.length));
  }
  return undefined;
}

function appliesAt(definition: OperationDefinition, level: OperationLevel, resourceType?: string): boolean {
  if (definition[level] !== true) return false;
  if (level === 'system') return true;
  const types = (definition.resource ?? []) as readonly (string | null)[];
  return types.includes(resourceType!) || types.includes('Resource') || types.includes('DomainResource');
}

/**
 * The operation framework's view of a custom operation: the stored definition decides decoding
 * and GET eligibility as for built-in ones; the handler runs the Bot with the decoded input
 * (plus the level, type and id it was called on) and returns what the bot returned.
 */
function botOperation(definition: OperationDefinition, botId: string): Operation {
  return {
    definition,
    async handler(input: OperationInput, request: OperationRequest) {
      const { ctx } = request;
      if (!ctx.bots) throw errors.notSupported('Bots are not enabled on this server');
      const bot = await ctx.repo.readResource('Bot', botId);
      const event = { ...input, ...(request.resourceType ? { resourceType: request.resourceType } : {}), ...(request.id ? { id: request.id } : {}) };
      const answer = await ctx.bots.execute(ctx, { bot, input: event, contentType: 'application/json' });
      if (answer.status !== 200) throw new OperationOutcomeError(JSON.parse(answer.body) as OperationOutcome, answer.status);
      return outputOf(definition, answer.body);
    },
  };
}

/** The bot's return as the operation's output: an object of out-parameters, or the resource of a `return` parameter. */
function outputOf(definition: OperationDefinition, body: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    value = body;
  }
  const names = outParameters(definition).map((parameter) => parameter.name);
  if (isRecord(value) && typeof value.resourceType === 'string' && names.includes('return')) return { return: value as Resource };
  if (isRecord(value) && value.resourceType === undefined) return value;
  if (names.length === 1) return { [names[0]]: value };
  throw errors.invalid(`The bot implementing $${definition.code} returned a value that is none of its out parameters (${names.join(', ')})`);
}
