import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { AuthService } from '../auth/service.js';
import type { Config } from '../config.js';
import type { Bot } from '../fhir/resources.js';
import type { Resource } from '../fhir/types.js';
import type { Identity } from '../identity/identity.js';
import type { BotExecutionAnswer, BotExecutionRequest, BotExecutor, RequestContext } from '../operations/context.js';
import { recordExecution } from './audit.js';
import { answerHostCall, type BotApi } from './host-calls.js';
import { botIdentity } from './membership.js';
import { asCommonJs } from './sandbox/bundle.js';
import { SandboxPool, type SandboxResult } from './sandbox/pool.js';
import type { BotOutput } from './sandbox/protocol.js';
import { botSecrets } from './secrets.js';

export interface BotRunnerDeps {
  config: Config;
  auth: AuthService;
  log: Logger;
  /** The router, as the given identity: what the bot's `medplum` client reaches. */
  apiAs(identity: Identity): BotApi;
}

const FHIR_JSON = 'application/fhir+json';
const TEXT_TYPES = ['text/plain', 'x-application/hl7-v2+er7'];

/**
 * Runs deployed bots (BotExecutor): reads the code, builds the event, runs it on the sandbox pool
 * acting as the Bot's membership, answers what the handler returned, and records an AuditEvent.
 */
export class BotRunner implements BotExecutor {
  private readonly pool: SandboxPool;

  constructor(private readonly deps: BotRunnerDeps) {
    this.pool = new SandboxPool(deps.config.botWorkers, deps.config.botMemoryMb * 1024 * 1024);
  }

  close(): Promise<void> {
    return this.pool.close();
  }

  async execute(ctx: RequestContext, request: BotExecutionRequest): Promise<BotExecutionAnswer> {
    const { auth } = this.deps;
    const projectId = request.bot.meta!.project!;
    const bot = (await auth.repo(projectId).readResource('Bot', request.bot.id!)) as Bot;
    const started = new Date();
    const result = await this.run(ctx, bot, request);
    const answer = answerOf(result, request.contentType);
    await recordExecution(auth, ctx, bot, { started, ended: new Date(), result, status: answer.status }).catch((error: unknown) =>
      ctx.log.warn({ err: error, bot: bot.id }, 'recording a bot execution failed'),
    );
    if (result.failure && result.failure.kind !== 'error') ctx.log.info({ bot: bot.id, failure: result.failure.kind }, 'bot run stopped');
    return answer;
  }

  private async run(ctx: RequestContext, bot: Bot, request: BotExecutionRequest): Promise<SandboxResult> {
    const { auth, config } = this.deps;
    const code = await deployedCode(auth, bot);
    if (code === undefined) return { failure: { kind: 'error', message: `Bot/${bot.id} has no deployed code: deploy it with POST Bot/${bot.id}/$deploy` }, logs: [] };
    const projectId = bot.meta!.project!;
    const api = this.deps.apiAs(await botIdentity(auth, projectId, bot.id!));
    const timeoutMs = bot.timeout && bot.timeout > 0 ? bot.timeout * 1000 : config.botTimeoutMs;
    const event = {
      bot: { reference: `Bot/${bot.id}`, display: bot.name },
      input: request.input,
      contentType: request.contentType,
      secrets: await botSecrets(auth, bot),
      traceId: ctx.requestId ?? randomUUID(),
      requester: ctx.identity.profile ? { reference: ctx.identity.profile } : undefined,
    };
    let commonJs: string;
    try {
      commonJs = await asCommonJs(code);
    } catch (error) {
      return { failure: { kind: 'error', message: `The bot code does not parse: ${error instanceof Error ? error.message : String(error)}` }, logs: [] };
    }
    const deadline = Date.now() + timeoutMs;
    return this.pool.run({
      key: `Bot/${bot.id}:${bot.executableCode?.url}`,
      code: commonJs,
      event: JSON.stringify(event),
      baseUrl: config.baseUrl,
      timeoutMs,
      host: (call) => answerHostCall(config, { botId: bot.id!, projectId }, api, call, deadline),
    });
  }
}

/** The JavaScript the Bot's `executableCode` Binary holds (what $deploy stored). */
async function deployedCode(auth: AuthService, bot: Bot): Promise<string | undefined> {
  const url = bot.executableCode?.url;
  const id = url?.startsWith('Binary/') ? url.slice('Binary/'.length) : undefined;
  if (!id) return undefined;
  const repo = auth.repo(bot.meta!.project!);
  try {
    const version = await repo.readVersion('Binary', id);
    const bytes = await repo.readBinaryData(version);
    return bytes ? Buffer.from(bytes).toString('utf8') : undefined;
  } catch {
    return undefined;
  }
}

const LIMITS: Record<string, string> = {
  timeout: 'The bot ran past its time limit and was stopped (Bot.timeout in seconds, or BOT_TIMEOUT_MS)',
  memory: 'The bot ran out of memory and was stopped (BOT_MEMORY_MB)',
};

/**
 * The HTTP answer: the handler's return value (JSON, a FHIR resource, or text in the request's
 * text type), an OperationOutcome when it returned nothing, 400 with the bot's message when it threw.
 */
export function answerOf(result: SandboxResult, requestType: string): BotExecutionAnswer {
  if (result.failure) {
    const text = LIMITS[result.failure.kind] ?? `Bot error: ${result.failure.message}`;
    return { status: 400, contentType: FHIR_JSON, body: JSON.stringify(operationOutcome('error', result.failure.kind === 'error' ? 'processing' : 'too-costly', text)) };
  }
  return outputAnswer(result.output!, requestType);
}

function outputAnswer(output: BotOutput, requestType: string): BotExecutionAnswer {
  if (output.kind === 'none') return { status: 200, contentType: FHIR_JSON, body: JSON.stringify(operationOutcome('information', 'informational', 'All OK')) };
  if (output.kind === 'text') {
    const type = TEXT_TYPES.find((candidate) => requestType.startsWith(candidate)) ?? 'text/plain';
    return { status: 200, contentType: `${type}; charset=utf-8`, body: output.value };
  }
  const isResource = /^\{\s*"resourceType"\s*:/.test(output.value);
  return { status: 200, contentType: isResource ? FHIR_JSON : 'application/json', body: output.value };
}

function operationOutcome(severity: string, code: string, diagnostics: string): Resource {
  return { resourceType: 'OperationOutcome', issue: [{ severity, code, details: { text: diagnostics } }] } as Resource;
}
