import { Worker } from 'node:worker_threads';
import { sandboxRuntime, workerScript } from './bundle.js';
import type { BotOutput, DoneMessage, FromWorker, HostRequest, HostResponse, RunFailure, ToWorker, WorkerSetup } from './protocol.js';

export interface SandboxRun {
  /** The bot and its code version (RunMessage.key). */
  key: string;
  code: string;
  event: string;
  baseUrl: string;
  timeoutMs: number;
  /** Answers the bot's calls (FHIR API as the bot, outbound fetch); a throw rejects the call in the sandbox. */
  host(request: HostRequest): Promise<HostResponse>;
}

export interface SandboxResult {
  output?: BotOutput;
  failure?: { kind: RunFailure; message: string };
  logs: string[];
}

/** A worker that did not answer within this much past a run's deadline is ended and replaced. */
const WATCHDOG_GRACE_MS = 2_000;

interface Slot {
  worker: Worker;
  /** The watchdog ended it: its run went past its deadline. */
  expired?: boolean;
  /** The key of its last run: it may hold that bot's warm context. */
  lastKey?: string;
  busy?: { runId: number; run: SandboxRun; done(result: SandboxResult): void; watchdog: NodeJS.Timeout };
}

/**
 * Bots run on a pool of worker threads, one run per worker at a time, so a bot that computes
 * forever never holds the server's event loop; runs wait in order for a free worker.
 */
export class SandboxPool {
  private readonly slots: Slot[] = [];
  private readonly queue: { run: SandboxRun; done(result: SandboxResult): void }[] = [];
  private nextRunId = 1;
  /** Workers being started (their setup is awaited): counted against the size. */
  private starting = 0;
  private closed = false;
  private setup?: Promise<{ setup: WorkerSetup; script: string }>;

  constructor(
    private readonly size: number,
    private readonly memoryBytes: number,
  ) {}

  run(run: SandboxRun): Promise<SandboxResult> {
    if (this.closed) return Promise.resolve({ failure: { kind: 'error', message: 'The server is shutting down' }, logs: [] });
    return new Promise((done) => {
      this.queue.push({ run, done });
      this.schedule();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.slots.splice(0).map((slot) => slot.worker.terminate()));
  }

  /** Starts queued runs on free workers; when no worker can start, the queued runs fail with the reason. */
  private schedule(): void {
    this.dispatch().catch((error: unknown) => {
      this.setup = undefined;
      const message = `The bot sandbox could not start: ${error instanceof Error ? error.message : String(error)}`;
      for (const queued of this.queue.splice(0)) queued.done({ failure: { kind: 'error', message }, logs: [] });
    });
  }

  private async dispatch(): Promise<void> {
    while (this.queue.length > 0) {
      const key = this.queue[0].run.key;
      const free = this.slots.filter((candidate) => !candidate.busy);
      const slot = free.find((candidate) => candidate.lastKey === key) ?? free[0] ?? (this.slots.length + this.starting < this.size ? await this.spawn() : undefined);
      if (!slot || slot.busy || this.closed) return;
      const next = this.queue.shift();
      if (!next) return;
      this.start(slot, next.run, next.done);
    }
  }

  private async spawn(): Promise<Slot> {
    this.setup ??= Promise.all([sandboxRuntime(), workerScript()]).then(([runtime, script]) => ({ setup: { runtime, memoryBytes: this.memoryBytes }, script }));
    this.starting++;
    const { setup, script } = await this.setup.finally(() => this.starting--);
    const slot: Slot = { worker: startWorker(setup, script) };
    this.slots.push(slot);
    slot.worker.on('message', (message: FromWorker) => this.receive(slot, message));
    slot.worker.on('error', () => undefined);
    slot.worker.on('exit', () => this.replace(slot, 'The bot sandbox stopped unexpectedly'));
    return slot;
  }

  private start(slot: Slot, run: SandboxRun, done: (result: SandboxResult) => void): void {
    const runId = this.nextRunId++;
    const watchdog = setTimeout(() => {
      slot.expired = true;
      void slot.worker.terminate();
    }, run.timeoutMs + WATCHDOG_GRACE_MS);
    slot.busy = { runId, run, done, watchdog };
    slot.lastKey = run.key;
    this.send(slot, { type: 'run', runId, key: run.key, code: run.code, event: run.event, baseUrl: run.baseUrl, timeoutMs: run.timeoutMs });
  }

  private receive(slot: Slot, message: FromWorker): void {
    const busy = slot.busy;
    if (!busy || busy.runId !== message.runId) return;
    if (message.type === 'done') return this.finish(slot, message);
    busy.run.host(message.request).then(
      (response) => this.send(slot, { type: 'reply', runId: message.runId, callId: message.callId, response }),
      (error: unknown) => this.send(slot, { type: 'reply', runId: message.runId, callId: message.callId, error: error instanceof Error ? error.message : String(error) }),
    );
  }

  private finish(slot: Slot, message: DoneMessage): void {
    const busy = slot.busy!;
    clearTimeout(busy.watchdog);
    slot.busy = undefined;
    busy.done({ output: message.output, failure: message.failure, logs: message.logs });
    this.schedule();
  }

  /** A worker that ended (watchdog, crash) fails its run and leaves its place to a new one. */
  private replace(slot: Slot, message: string): void {
    const index = this.slots.indexOf(slot);
    if (index >= 0) this.slots.splice(index, 1);
    if (slot.busy) {
      clearTimeout(slot.busy.watchdog);
      slot.busy.done({ failure: { kind: slot.expired ? 'timeout' : 'error', message }, logs: [] });
      slot.busy = undefined;
    }
    if (!this.closed) this.schedule();
  }

  private send(slot: Slot, message: ToWorker): void {
    slot.worker.postMessage(message);
  }
}

function startWorker(setup: WorkerSetup, script: string): Worker {
  return new Worker(script, { workerData: setup });
}
