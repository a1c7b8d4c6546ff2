/**
 * Profile validation speed in-process: a blood pressure Observation checked against HL7's bp
 * profile (and the vitalsigns rules it inherits), after warm-up; the structural check every write
 * runs first is timed beside it.
 * Run: npx tsx bench/profiles.ts
 */
import { performance } from 'node:perf_hooks';
import { validateResource } from '../src/validation/index.js';
import { shippedProfiles } from '../src/validation/profiles/library.js';
import { validateAgainstProfile } from '../src/validation/profiles/validate.js';
import { BP, bloodPressure } from '../test/profiles/helpers.js';

function rate(name: string, runs: number, work: () => void): void {
  for (let i = 0; i < runs / 10; i++) work();
  const start = performance.now();
  for (let i = 0; i < runs; i++) work();
  const seconds = (performance.now() - start) / 1000;
  console.log(`${name.padEnd(36)} ${Math.round(runs / seconds).toLocaleString('en')} resources/s (${((seconds * 1e6) / runs).toFixed(1)} µs each)`);
}

const loadStart = performance.now();
const library = shippedProfiles();
const profile = library.compiled(BP)!;
console.log(`first use (reads and compiles the shipped profiles): ${(performance.now() - loadStart).toFixed(0)} ms`);
const observation = { ...bloodPressure(), resourceType: 'Observation' };
if (validateAgainstProfile(observation, profile, library, { warnings: false }).length > 0) throw new Error('the bench Observation must conform to bp');
rate('structure (every write)', 100_000, () => validateResource(observation));
rate('bp profile', 50_000, () => validateAgainstProfile(observation, profile, library, { warnings: false }));
