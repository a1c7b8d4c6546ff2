import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { build, transform } from 'esbuild';

let bundled: Promise<string> | undefined;

/**
 * The sandbox runtime (prelude.ts with @medplum/core and whatwg-url) as one script for QuickJS,
 * built once per process on first use with esbuild (what tsx already runs on) and kept in memory.
 */
export function sandboxRuntime(): Promise<string> {
  bundled ??= build({
    entryPoints: [new URL('./prelude.ts', import.meta.url).pathname],
    bundle: true,
    format: 'iife',
    platform: 'neutral',
    mainFields: ['module', 'main'],
    target: 'es2020',
    minify: true,
    write: false,
    logLevel: 'silent',
  }).then((result) => result.outputFiles[0].text);
  return bundled;
}

const ESM_SYNTAX = /^\s*(import|export)\s/m;
const converted = new Map<string, Promise<string>>();
const MAX_CONVERTED = 100;

/**
 * Bot code as CommonJS, what the sandbox evaluates: Medplum's bundler emits CommonJS already;
 * ES module code (`export async function handler`, `import ... from '@medplum/core'`) is converted.
 */
export function asCommonJs(code: string): Promise<string> {
  if (!ESM_SYNTAX.test(code)) return Promise.resolve(code);
  let result = converted.get(code);
  if (!result) {
    if (converted.size >= MAX_CONVERTED) converted.delete(converted.keys().next().value!);
    result = transform(code, { format: 'cjs', loader: 'js', target: 'es2020' }).then((out) => out.code);
    converted.set(code, result);
    result.catch(() => converted.delete(code));
  }
  return result;
}

let script: Promise<string> | undefined;

/**
 * The worker thread's script (worker.ts) as plain JavaScript: worker threads on Node 20 do not
 * inherit tsx's loader, so it is bundled once per process (its packages left external) into
 * node_modules/.cache, where Node resolves those packages.
 */
export function workerScript(): Promise<string> {
  script ??= build({
    entryPoints: [new URL('./worker.ts', import.meta.url).pathname],
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    write: false,
    logLevel: 'silent',
  }).then(async (result) => {
    const text = result.outputFiles[0].text;
    const nodeModules = join(dirname(createRequire(import.meta.url).resolve('esbuild/package.json')), '..');
    const file = join(nodeModules, '.cache', 'flint', `bot-worker-${createHash('sha256').update(text).digest('hex').slice(0, 16)}.mjs`);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, text);
    return file;
  });
  return script;
}
