/** Messages between the bot pool (main thread) and its sandbox workers. */

/** A call from bot code to the host: the FHIR API as the bot, or an outbound fetch. */
export interface HostRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
}

export interface HostResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface RunMessage {
  type: 'run';
  runId: number;
  /**
   * Names the bot and its deployed code: a worker may run the next run of the same key in the
   * context the last one left (like a warm serverless function); never another bot's.
   */
  key: string;
  /** CommonJS code that sets `exports.handler`. */
  code: string;
  /** The event as JSON text. */
  event: string;
  /** What MedplumClient takes as its baseUrl: requests below it reach the router. */
  baseUrl: string;
  timeoutMs: number;
}

export interface ReplyMessage {
  type: 'reply';
  runId: number;
  callId: number;
  response?: HostResponse;
  error?: string;
}

export type ToWorker = RunMessage | ReplyMessage;

export interface CallMessage {
  type: 'call';
  runId: number;
  callId: number;
  request: HostRequest;
}

/** What the handler returned: nothing, text, or a JSON value (as text). */
export type BotOutput = { kind: 'none' } | { kind: 'text'; value: string } | { kind: 'json'; value: string };

export type RunFailure = 'timeout' | 'memory' | 'error';

export interface DoneMessage {
  type: 'done';
  runId: number;
  output?: BotOutput;
  failure?: { kind: RunFailure; message: string };
  logs: string[];
}

export type FromWorker = CallMessage | DoneMessage;

export interface WorkerSetup {
  runtime: string;
  memoryBytes: number;
}
