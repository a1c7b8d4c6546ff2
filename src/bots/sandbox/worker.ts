/**
 * A sandbox worker thread: runs one bot at a time in a fresh QuickJS runtime (WebAssembly), with a
 * memory limit on the runtime, an interrupt handler at the deadline, and the host reachable only
 * through the `__flint*` functions installed here. A runtime is prepared ahead (the sandbox
 * runtime evaluated in it) so the next run starts at once. A runtime serves one bot only: after
 * a clean run it is kept for that bot's next run with the same code (module state survives, as
 * in a warm serverless function); after a failure, or when another bot runs, it is freed.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { newQuickJSWASMModuleFromVariant, type QuickJSContext, type QuickJSDeferredPromise, type QuickJSHandle, type QuickJSRuntime } from 'quickjs-emscripten-core';
import releaseSync from '@jitl/quickjs-wasmfile-release-sync';
import type { BotOutput, DoneMessage, FromWorker, RunFailure, RunMessage, ToWorker, WorkerSetup } from './protocol.js';

const MAX_LOG_LINES = 1000;
const MAX_LOG_CHARS = 64 * 1024;
const STACK_BYTES = 1024 * 1024;

const setup = workerData as WorkerSetup;
const port = parentPort!;
const QuickJS = await newQuickJSWASMModuleFromVariant(releaseSync);

/** One runtime and its context, and what the run in it has outstanding. */
interface Sandbox {
  runtime: QuickJSRuntime;
  vm: QuickJSContext;
  run?: RunMessage;
  deadline: number;
  logs: string[];
  logChars: number;
  nextCallId: number;
  calls: Map<number, QuickJSDeferredPromise>;
  timers: Map<number, { timer: NodeJS.Timeout; callback: QuickJSHandle }>;
  nextTimerId: number;
  finished: boolean;
}

function post(message: FromWorker): void {
  port.postMessage(message);
}

function prepare(): Sandbox {
  const runtime = QuickJS.newRuntime();
  runtime.setMemoryLimit(setup.memoryBytes);
  runtime.setMaxStackSize(STACK_BYTES);
  const vm = runtime.newContext();
  const box: Sandbox = { runtime, vm, deadline: Infinity, logs: [], logChars: 0, nextCallId: 1, calls: new Map(), timers: new Map(), nextTimerId: 1, finished: false };
  runtime.setInterruptHandler(() => Date.now() > box.deadline);
  installHostFunctions(box);
  const loaded = vm.evalCode(setup.runtime, 'flint-bot-runtime.js');
  if (loaded.error) {
    const problem = vm.dump(loaded.error) as unknown;
    loaded.error.dispose();
    throw new Error(`The bot runtime failed to load: ${JSON.stringify(problem)}`);
  }
  loaded.value.dispose();
  return box;
}

function installHostFunctions(box: Sandbox): void {
  const { vm } = box;
  const define = (name: string, fn: (...args: QuickJSHandle[]) => QuickJSHandle | void) => {
    const handle = vm.newFunction(name, fn);
    vm.setProp(vm.global, name, handle);
    handle.dispose();
  };
  define('__flintCall', (_kind, request) => {
    const deferred = vm.newPromise();
    const callId = box.nextCallId++;
    box.calls.set(callId, deferred);
    post({ type: 'call', runId: box.run!.runId, callId, request: JSON.parse(vm.getString(request)) });
    return deferred.handle;
  });
  define('__flintLog', (level, text) => log(box, `${vm.getString(level)}: ${vm.getString(text)}`));
  define('__flintTimer', (callback, ms) => {
    const id = box.nextTimerId++;
    const kept = callback.dup();
    const timer = setTimeout(() => {
      box.timers.delete(id);
      if (box.finished) return kept.dispose();
      const result = vm.callFunction(kept, vm.undefined);
      kept.dispose();
      if (result.error) result.error.dispose();
      else result.value.dispose();
      drainJobs(box);
    }, Math.min(vm.getNumber(ms), 2 ** 31 - 1));
    box.timers.set(id, { timer, callback: kept });
    return vm.newNumber(id);
  });
  define('__flintClearTimer', (id) => {
    const entry = box.timers.get(vm.getNumber(id));
    if (!entry) return;
    clearTimeout(entry.timer);
    entry.callback.dispose();
    box.timers.delete(vm.getNumber(id));
  });
}

function log(box: Sandbox, line: string): void {
  if (box.logs.length >= MAX_LOG_LINES || box.logChars >= MAX_LOG_CHARS) return;
  const kept = line.slice(0, MAX_LOG_CHARS - box.logChars);
  box.logs.push(kept);
  box.logChars += kept.length;
}

function drainJobs(box: Sandbox): void {
  const result = box.runtime.executePendingJobs();
  if (result.error) result.error.dispose();
}

function answer(box: Sandbox, message: Extract<ToWorker, { type: 'reply' }>): void {
  const deferred = box.calls.get(message.callId);
  if (!deferred || box.finished) return;
  box.calls.delete(message.callId);
  const { vm } = box;
  if (message.response) {
    const text = vm.newString(JSON.stringify(message.response));
    deferred.resolve(text);
    text.dispose();
  } else {
    const error = vm.newError(message.error ?? 'The host refused the call');
    deferred.reject(error);
    error.dispose();
  }
  deferred.dispose();
  drainJobs(box);
}

/** The error thrown in the sandbox, as a failure kind and the bot's message. */
function failureOf(box: Sandbox, error: QuickJSHandle): { kind: RunFailure; message: string } {
  let message: string;
  try {
    const dumped = box.vm.dump(error) as unknown;
    message = typeof dumped === 'object' && dumped !== null && 'message' in dumped ? String((dumped as { message: unknown }).message) : String(dumped);
  } catch {
    message = 'out of memory';
  } finally {
    error.dispose();
  }
  if (Date.now() > box.deadline || message === 'interrupted') return { kind: 'timeout', message };
  if (/out of memory/i.test(message)) return { kind: 'memory', message };
  return { kind: 'error', message };
}

async function execute(box: Sandbox, run: RunMessage): Promise<Pick<DoneMessage, 'output' | 'failure'>> {
  const { vm } = box;
  box.run = run;
  box.deadline = Date.now() + run.timeoutMs;
  const fn = vm.getProp(vm.global, '__flintRun');
  const args = [vm.newString(run.code), vm.newString(run.event), vm.newString(run.baseUrl)];
  const started = vm.callFunction(fn, vm.undefined, ...args);
  fn.dispose();
  for (const arg of args) arg.dispose();
  if (started.error) return { failure: failureOf(box, started.error) };
  const settled = vm.resolvePromise(started.value);
  started.value.dispose();
  drainJobs(box);
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), Math.max(0, box.deadline - Date.now()))));
  const result = await Promise.race([settled, timedOut]);
  clearTimeout(timer);
  if (result === 'timeout') {
    // A run still waiting (on a timer or a call) when its time is up; `settled` is left to be discarded.
    void settled.then((late) => (late.error ?? late.value).dispose(), () => undefined);
    return { failure: { kind: 'timeout', message: 'interrupted' } };
  }
  if (result.error) return { failure: failureOf(box, result.error) };
  const text = vm.getString(result.value);
  result.value.dispose();
  return { output: JSON.parse(text) as BotOutput };
}

/** Ends a run: what it left pending is dropped, then its runtime is freed. */
function discard(box: Sandbox): void {
  box.finished = true;
  for (const { timer, callback } of box.timers.values()) {
    clearTimeout(timer);
    callback.dispose();
  }
  for (const deferred of box.calls.values()) deferred.dispose();
  box.vm.dispose();
  box.runtime.dispose();
}

let spare: Sandbox | undefined;
let current: Sandbox | undefined;
let warm: { key: string; box: Sandbox } | undefined;

port.on('message', (message: ToWorker) => {
  if (message.type === 'reply') {
    if (current?.run?.runId === message.runId) answer(current, message);
    return;
  }
  void runOne(message);
});

function sandboxFor(run: RunMessage): Sandbox {
  const reused = warm?.key === run.key ? warm.box : undefined;
  if (warm && !reused) freeOrExit(warm.box);
  warm = undefined;
  if (reused) {
    Object.assign(reused, { logs: [], logChars: 0 });
    return reused;
  }
  const box = spare ?? prepare();
  spare = undefined;
  return box;
}

function freeOrExit(box: Sandbox): void {
  try {
    discard(box);
  } catch {
    // A runtime that cannot be freed cleanly (QuickJS asserts on leaked objects): start a new worker.
    process.exit(1);
  }
}

async function runOne(run: RunMessage): Promise<void> {
  const box = sandboxFor(run);
  current = box;
  let outcome: Pick<DoneMessage, 'output' | 'failure'>;
  try {
    outcome = await execute(box, run);
  } catch (error) {
    outcome = { failure: { kind: 'error', message: error instanceof Error ? error.message : String(error) } };
  }
  current = undefined;
  box.deadline = Infinity;
  post({ type: 'done', runId: run.runId, logs: box.logs, ...outcome });
  if (!outcome.failure && box.calls.size === 0 && box.timers.size === 0) warm = { key: run.key, box };
  else freeOrExit(box);
  setImmediate(() => (spare ??= prepare()));
}

spare = prepare();
