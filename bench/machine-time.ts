import { readdirSync, readFileSync } from 'node:fs';
import { cpuSeconds } from './process-cpu.js';

/**
 * Where a machine's time went during a measured window, from /proc: the processes a bench names
 * (server, database backends, the bench process itself as load generator), PostgreSQL's own
 * processes (WAL writer, checkpointer, background writer: shared by every database of the
 * cluster), every other process, the kernel's interrupt work, and idle. On a quiet machine the
 * idle part is time the create pipeline leaves unused (waits on the WAL flush, a group not yet
 * started); on a shared one the other processes take it.
 */
export interface MachineTime {
  /** Seconds of every core together: wall time times cores. */
  readonly total: number;
  readonly named: Record<string, number>;
  readonly postgresOwn: number;
  readonly otherProcesses: number;
  readonly interrupts: number;
  readonly idle: number;
}

interface Snapshot {
  readonly cpu: number[];
  readonly processes: Map<number, { seconds: number; postgresOwn: boolean }>;
}

const TICKS_PER_SECOND = 100;
const POSTGRES_OWN = /^postgres: [^:]+: (walwriter|checkpointer|background writer|autovacuum launcher|logical replication launcher|archiver|stats collector)/;

/** The `cpu` line of /proc/stat: user, nice, system, idle, iowait, irq, softirq, steal (ticks). */
export function cpuLine(): number[] {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0];
  return line.trim().split(/\s+/).slice(1, 9).map(Number);
}

function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

export function machineSnapshot(): Snapshot {
  const processes = new Map<number, { seconds: number; postgresOwn: boolean }>();
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    processes.set(pid, { seconds: cpuSeconds(pid), postgresOwn: POSTGRES_OWN.test(commandLine(pid)) });
  }
  return { cpu: cpuLine(), processes };
}

/**
 * The machine's time since `before`, split by `named` (a name per set of pids, e.g. server,
 * database backends, load generator). Processes that started and ended within the window count
 * in none of the parts but in the machine's busy time, so otherProcesses is what is left of it.
 */
export function machineTimeSince(before: Snapshot, named: Record<string, readonly number[]>): MachineTime {
  const after = machineSnapshot();
  const ticks = after.cpu.map((value, index) => (value - before.cpu[index]) / TICKS_PER_SECOND);
  const [user, nice, system, idle, iowait, irq, softirq, steal] = ticks;
  const used = (pid: number) => Math.max(0, (after.processes.get(pid)?.seconds ?? 0) - (before.processes.get(pid)?.seconds ?? 0));
  const namedSeconds: Record<string, number> = {};
  const counted = new Set<number>();
  for (const [name, pids] of Object.entries(named)) {
    namedSeconds[name] = pids.reduce((sum, pid) => sum + used(pid), 0);
    for (const pid of pids) counted.add(pid);
  }
  let postgresOwn = 0;
  for (const [pid, process] of after.processes) if (process.postgresOwn && !counted.has(pid)) postgresOwn += used(pid);
  const processTime = user + nice + system;
  const namedTotal = Object.values(namedSeconds).reduce((sum, seconds) => sum + seconds, 0);
  return {
    total: user + nice + system + idle + iowait + irq + softirq + steal,
    named: namedSeconds,
    postgresOwn,
    otherProcesses: Math.max(0, processTime - namedTotal - postgresOwn),
    interrupts: irq + softirq + steal,
    idle: idle + iowait,
  };
}
