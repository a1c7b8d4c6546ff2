import { HOSTILE_SHAPES, sendShape, type HostileShape, type ShapeTarget } from '../test/fuzz/shapes.js';

/**
 * The `hostile` scenario: a few connections replay the fuzz suite's hostile shapes
 * (test/fuzz/shapes.ts) in a loop while another loop times the health check. The target: the
 * health check under 1 s meanwhile, and no answer outside 4xx (or 2xx for the valid shapes).
 */

export const HOSTILE_CONNECTIONS = 4;
/** How long one hostile request may take before the loop gives up on it (counted as `no answer`). */
const REQUEST_DEADLINE_MS = 60_000;
/** Pause between two health checks: a sample every ~100 ms, not a load of its own. */
const HEALTH_PAUSE_MS = 100;

export interface HostileFigures {
  /** Hostile requests answered, per second. */
  readonly rps: number;
  /** Answers by class: `2xx`, `4xx`, `5xx`, `no answer`; and answers other than the shape expects. */
  readonly answers: Record<string, number>;
  readonly unexpected: number;
  /** Health check latency (ms) and the checks that failed or did not answer within the deadline. */
  readonly health: { p50: number; p99: number; max: number; samples: number; failures: number };
}

/** Replays `shapes` (BENCH_HOSTILE_SKIP, a regular expression on names, leaves some out) for `seconds`. */
export async function runHostile(target: ShapeTarget, seconds: number, skip?: RegExp): Promise<HostileFigures> {
  const shapes = HOSTILE_SHAPES.filter((shape) => !skip?.test(shape.name));
  const until = Date.now() + seconds * 1000;
  const answers: Record<string, number> = {};
  let unexpected = 0;
  let sent = 0;
  const replay = async (start: number) => {
    for (let i = start; Date.now() < until; i++) {
      const shape = shapes[i % shapes.length];
      const status = await answerStatus(target, shape);
      const kind = typeof status === 'number' ? `${Math.floor(status / 100)}xx` : status;
      answers[kind] = (answers[kind] ?? 0) + 1;
      if (!asExpected(shape, target, status)) unexpected++;
      sent++;
    }
  };
  const started = Date.now();
  const [health] = await Promise.all([
    timeHealthChecks(target.baseUrl, until),
    ...Array.from({ length: HOSTILE_CONNECTIONS }, (_, c) => replay(Math.floor((c * shapes.length) / HOSTILE_CONNECTIONS))),
  ]);
  return { rps: Math.round((sent * 1000) / (Date.now() - started)), answers, unexpected, health };
}

async function answerStatus(target: ShapeTarget, shape: HostileShape): Promise<number | 'no answer'> {
  try {
    return (await sendShape(target, shape, AbortSignal.timeout(REQUEST_DEADLINE_MS))).status;
  } catch {
    return 'no answer';
  }
}

function asExpected(shape: HostileShape, target: ShapeTarget, status: number | 'no answer'): boolean {
  if (typeof status !== 'number') return false;
  const expected = shape.expected(target.database);
  if (expected === 'accepted') return status >= 200 && status < 300;
  // A refused GraphQL field: the request is valid, the answer 200 with the field's error.
  if (expected === 'field-refused') return status === 200;
  return status >= 400 && status < 500;
}

async function timeHealthChecks(baseUrl: string, until: number): Promise<HostileFigures['health']> {
  const latencies: number[] = [];
  let failures = 0;
  while (Date.now() < until) {
    const started = performance.now();
    const ok = await fetch(`${baseUrl}/healthcheck`, { signal: AbortSignal.timeout(REQUEST_DEADLINE_MS) }).then(
      async (res) => (await res.arrayBuffer(), res.status === 200),
      () => false,
    );
    latencies.push(performance.now() - started);
    if (!ok) failures++;
    await new Promise((resolve) => setTimeout(resolve, HEALTH_PAUSE_MS));
  }
  latencies.sort((a, b) => a - b);
  const at = (q: number) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN);
  return { p50: at(0.5), p99: at(0.99), max: Math.round(latencies.at(-1) ?? NaN), samples: latencies.length, failures };
}
