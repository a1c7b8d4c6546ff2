import { mkdtemp, writeFile } from 'node:fs/promises';
import { isBuiltin } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build, transform, type Plugin } from 'esbuild';

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
 * inherit tsx's loader, so it is bundled once per process. Its packages stay external, imported by
 * absolute URL, so the file can live outside the installation: in a container the application
 * folder is read-only to the server's user. The folder is private to this process (mkdtemp, mode
 * 0700), so no other local user can put a script of their own in its place.
 */
export function workerScript(): Promise<string> {
  script ??= build({
    entryPoints: [new URL('./worker.ts', import.meta.url).pathname],
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    plugins: [packagesByAbsoluteUrl],
    write: false,
    logLevel: 'silent',
  }).then(async (result) => {
    const folder = await mkdtemp(join(tmpdir(), 'flint-bots-'));
    const file = join(folder, 'bot-worker.mjs');
    await writeFile(file, result.outputFiles[0].text, { mode: 0o600 });
    return file;
  });
  return script;
}

/** Leaves each package import external, resolved from this folder to the file URL Node would load. */
const packagesByAbsoluteUrl: Plugin = {
  name: 'packages-by-absolute-url',
  setup(pluginBuild) {
    pluginBuild.onResolve({ filter: /^[^./]/ }, (args) => {
      if (isBuiltin(args.path)) return { path: args.path, external: true };
      return { path: import.meta.resolve(args.path), external: true };
    });
  },
};
