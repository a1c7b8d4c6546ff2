/**
 * The bots' runtime, bundled (src/bots/sandbox/bundle.ts) and evaluated inside each QuickJS
 * context before a bot runs: web APIs first, then URL, then @medplum/core, whose MedplumClient is
 * the bot's `medplum` argument. Nothing of the host is reachable but the worker's `__flint*` calls.
 */
import { fetchShim } from './web-shims.js';
import './url-shim.js';
import * as medplumCore from '@medplum/core';
import type { BotOutput } from './protocol.js';

const scope = globalThis as Record<string, unknown>;

/** `require` inside bot code: the bundled @medplum/core and nothing else. */
function botRequire(name: string): unknown {
  if (name === '@medplum/core') return medplumCore;
  throw new Error(`Cannot find module '${name}': bots may require only '@medplum/core'`);
}

interface BotEvent {
  bot: unknown;
  input: unknown;
  contentType: string;
  secrets: Record<string, unknown>;
  traceId: string;
  requester?: unknown;
}


const HL7_V2 = 'x-application/hl7-v2+er7';

function outputOf(result: unknown): BotOutput {
  if (result === undefined || result === null) return { kind: 'none' };
  if (result instanceof medplumCore.Hl7Message) return { kind: 'text', value: result.toString() };
  if (typeof result === 'string') return { kind: 'text', value: result };
  if (typeof result === 'number' || typeof result === 'boolean') return { kind: 'text', value: String(result) };
  return { kind: 'json', value: JSON.stringify(result) };
}

/**
 * Evaluates the bot's CommonJS code and calls its `handler(medplum, event)`; resolves to the
 * output as JSON text (the worker reads it when the promise settles).
 */
async function runBot(code: string, eventJson: string, baseUrl: string): Promise<string> {
  const module = { exports: {} as Record<string, unknown> };
  new Function('exports', 'module', 'require', code)(module.exports, module, botRequire);
  const handler = module.exports.handler ?? (module.exports.default as Record<string, unknown> | undefined)?.handler;
  if (typeof handler !== 'function') throw new Error('The bot code exports no handler function (exports.handler or export async function handler)');
  const event = JSON.parse(eventJson) as BotEvent;
  if (event.contentType === HL7_V2 && typeof event.input === 'string') event.input = medplumCore.Hl7Message.parse(event.input);
  const medplum = new medplumCore.MedplumClient({ baseUrl, fetch: fetchShim as unknown as typeof fetch });
  medplum.setAccessToken('bot');
  return JSON.stringify(outputOf(await handler(medplum, event)));
}

scope.__flintRun = runBot;
