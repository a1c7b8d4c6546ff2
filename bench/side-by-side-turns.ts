import { cpuLine } from './machine-time.js';
import type { Side } from './side-by-side-data.js';

/**
 * One server's turn: the other servers' processes are stopped (SIGSTOP, then SIGCONT), so that
 * work they left behind (a queue of jobs after the seeding writes, a timer) cannot take the cores
 * from the server being measured, and the turn starts once the machine is quiet.
 */

/** A machine busier than this (all cores, a second's average) is not quiet yet. */
const QUIET_SHARE = 0.1;
const QUIET_WAIT_SECONDS = Number(process.env.BENCH_QUIET_SECONDS ?? 60);

/** Busy and all ticks of every core together (machine-time.ts cpuLine: user..steal, idle and iowait at 3 and 4). */
function cpuTicks(): { busy: number; all: number } {
  const ticks = cpuLine();
  const all = ticks.reduce((sum, t) => sum + t, 0);
  return { busy: all - ticks[3] - ticks[4], all };
}

/** The share of the machine's cores that were busy over the next `ms`. */
async function busyShare(ms: number): Promise<number> {
  const before = cpuTicks();
  await new Promise((resolve) => setTimeout(resolve, ms));
  const after = cpuTicks();
  return (after.busy - before.busy) / Math.max(1, after.all - before.all);
}

/** Waits (up to BENCH_QUIET_SECONDS) until a second passes with the machine under QUIET_SHARE busy; the last share seen. */
export async function untilQuiet(): Promise<number> {
  let share = 1;
  for (let second = 0; second < QUIET_WAIT_SECONDS && share >= QUIET_SHARE; second++) share = await busyShare(1000);
  return share;
}

function signal(pids: readonly number[], name: 'SIGSTOP' | 'SIGCONT'): void {
  for (const pid of pids) {
    try {
      process.kill(pid, name);
    } catch {
      // A process that has ended has nothing to pause.
    }
  }
}

/** Runs `task` with every other side's processes stopped and the machine quiet; the busy share it started at is logged. */
export async function aloneOn<T>(sides: readonly Side[], side: Side, task: () => Promise<T>): Promise<T> {
  const others = sides.filter((s) => s !== side).flatMap((s) => s.pids);
  signal(others, 'SIGSTOP');
  try {
    const share = await untilQuiet();
    if (share >= QUIET_SHARE) console.log(`${side.name}: the machine stayed ${Math.round(share * 100)}% busy; measured anyway`);
    return await task();
  } finally {
    signal(others, 'SIGCONT');
  }
}

/** The pids in SIDE_<letter>_PIDS (comma-separated): the other server's processes to stop during Flint's turn. */
export function pidsFromEnv(letter: 'A' | 'B'): number[] {
  return (process.env[`SIDE_${letter}_PIDS`] ?? '').split(',').filter(Boolean).map(Number).filter(Number.isInteger);
}
