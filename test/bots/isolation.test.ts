import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
import { deployedBot, diagnostics, execute } from './helpers.js';

// Small caps so that the limits are reached quickly; a server of its own for them.
const api = await useTestServer({ BOT_TIMEOUT_MS: '1500', BOT_MEMORY_MB: '48', BOT_WORKERS: '2' });

describe('bot sandbox', () => {
  it('stops a bot that loops forever with a clear OperationOutcome, while the server keeps answering', async () => {
    const client = api.newProject();
    const id = await deployedBot(client, 'exports.handler = async () => { while (true) {} };');
    let finished = false;
    const looping = execute(client, id, {}).finally(() => (finished = true));
    const other = await client.get('/Patient');
    expect(other.status).toBe(200);
    expect(finished).toBe(false);
    const answer = await looping;
    expect(answer.status).toBe(400);
    expect(answer.body.issue[0].code).toBe('too-costly');
    expect(diagnostics(answer.body)).toContain('time limit');
  });

  it('stops a bot that waits forever on a promise', async () => {
    const client = api.newProject();
    const id = await deployedBot(client, 'exports.handler = () => new Promise(() => {});');
    const answer = await execute(client, id, {});
    expect(answer.status).toBe(400);
    expect(diagnostics(answer.body)).toContain('time limit');
  });

  it('honours Bot.timeout (seconds) over the configured default', async () => {
    const client = api.newProject();
    const id = await deployedBot(client, 'exports.handler = () => new Promise((resolve) => setTimeout(() => resolve("slow but allowed"), 2000));', { timeout: 5 });
    const answer = await execute(client, id, {});
    expect(answer.status).toBe(200);
    expect(answer.text).toBe('slow but allowed');
  });

  it('stops a bot that allocates without bound at the memory cap', async () => {
    const client = api.newProject();
    // A Bot.timeout long enough that the memory cap, not the time cap, stops it.
    const id = await deployedBot(client, 'exports.handler = async () => { const kept = []; while (true) kept.push([Math.random(), { n: Math.random() }]); };', { timeout: 60 });
    const answer = await execute(client, id, {});
    expect(answer.status).toBe(400);
    expect(diagnostics(answer.body)).toContain('out of memory');
  });

  it('gives bot code no process, environment or host modules', async () => {
    const client = api.newProject();
    const id = await deployedBot(client, 'exports.handler = async () => [typeof process, typeof Buffer, typeof globalThis.require, typeof module.require].join(",");');
    const answer = await execute(client, id, {});
    expect(answer.text).toBe('undefined,undefined,undefined,undefined');
  });

  it('refuses process.env with the bot error', async () => {
    const client = api.newProject();
    const id = await deployedBot(client, 'exports.handler = async () => process.env.DATABASE_URL;');
    const answer = await execute(client, id, {});
    expect(answer.status).toBe(400);
    expect(diagnostics(answer.body)).toContain("'process' is not defined");
  });

  it("refuses require('fs'): only @medplum/core can be required", async () => {
    const client = api.newProject();
    const id = await deployedBot(client, 'const fs = require("fs"); exports.handler = async () => fs.readFileSync("/etc/passwd", "utf8");');
    const answer = await execute(client, id, {});
    expect(answer.status).toBe(400);
    expect(diagnostics(answer.body)).toContain("Cannot find module 'fs'");
  });

  it('refuses outbound fetch unless the configuration allows it', async () => {
    const client = api.newProject();
    const id = await deployedBot(client, 'exports.handler = async () => (await fetch("http://127.0.0.1:9/")).status;');
    const answer = await execute(client, id, {});
    expect(answer.status).toBe(400);
    expect(diagnostics(answer.body)).toContain('Outbound fetch is disabled');
  });

  it('runs the next bot normally after one was stopped', async () => {
    const client = api.newProject();
    const looping = await deployedBot(client, 'exports.handler = async () => { for (;;) {} };');
    await execute(client, looping, {});
    const fine = await deployedBot(client, 'exports.handler = async () => "still here";');
    expect((await execute(client, fine, {})).text).toBe('still here');
  });

  it('never lets one bot see what another left in its global scope', async () => {
    const client = api.newProject();
    const writer = await deployedBot(client, 'exports.handler = async () => { globalThis.leaked = "from another bot"; return "set"; };');
    const reader = await deployedBot(client, 'exports.handler = async () => String(globalThis.leaked);');
    for (let i = 0; i < 3; i++) {
      expect((await execute(client, writer, {})).text).toBe('set');
      expect((await execute(client, reader, {})).text).toBe('undefined');
    }
  });
});
