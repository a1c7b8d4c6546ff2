import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { answerHostCall } from '../../src/bots/host-calls.js';
import { loadConfig } from '../../src/config.js';
import { testEnv, useTestServer } from '../helpers/server.js';
import { deployedBot, execute } from './helpers.js';

// Outbound fetch allowed for every bot, loopback included: the receiver below runs on loopback.
const api = await useTestServer({ BOT_FETCH_ALLOWED: '*', OUTBOUND_ALLOW_PRIVATE_ADDRESSES: 'true' });

const receiver = createServer((req, res) => {
  let body = '';
  req.on('data', (chunk) => (body += chunk));
  req.on('end', () => {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ method: req.method, body, header: req.headers['x-bot'] ?? null }));
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
afterAll(() => new Promise<void>((resolve) => receiver.close(() => resolve())));

describe('outbound fetch from bots', () => {
  it('reaches an endpoint when the configuration allows it', async () => {
    const client = api.newProject();
    const code = `exports.handler = async (medplum, event) => {
      const res = await fetch(event.input.url, { method: "POST", headers: { "X-Bot": "yes" }, body: JSON.stringify({ hello: 1 }) });
      return { status: res.status, echoed: await res.json() };
    };`;
    const id = await deployedBot(client, code);
    const answer = await execute(client, id, { url: receiverUrl });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual({ status: 200, echoed: { method: 'POST', body: '{"hello":1}', header: 'yes' } });
  });
});

describe('the address check of outbound fetch', () => {
  const config = loadConfig(testEnv({ BOT_FETCH_ALLOWED: '*', OUTBOUND_ALLOW_PRIVATE_ADDRESSES: 'false' }));
  const bot = { botId: 'b', projectId: 'p' };
  const call = (url: string) =>
    answerHostCall(config, bot, () => Promise.reject(new Error('not an API call')), { method: 'GET', url, headers: {} }, Date.now() + 2000);

  it.each(['http://127.0.0.1:9/', 'http://[::1]:9/', 'http://169.254.169.254/latest/meta-data', 'http://10.1.2.3/', 'http://192.168.0.1/', 'http://localhost:9/'])(
    'refuses %s unless private addresses are allowed',
    async (url) => {
      await expect(call(url)).rejects.toThrow(/loopback, private or link-local/);
    },
  );

  it('refuses what is not http or https', async () => {
    await expect(call('file:///etc/passwd')).rejects.toThrow(/only http and https/);
  });

  it('refuses every outbound fetch of a bot not allowed', async () => {
    const closed = loadConfig(testEnv({ BOT_FETCH_ALLOWED: 'Project/other' }));
    await expect(answerHostCall(closed, bot, () => Promise.reject(new Error('no')), { method: 'GET', url: 'https://example.org/', headers: {} }, Date.now() + 2000)).rejects.toThrow(
      /disabled for this bot/,
    );
  });

  it('names a malformed BOT_FETCH_ALLOWED entry at start', () => {
    expect(() => loadConfig(testEnv({ BOT_FETCH_ALLOWED: 'everyone' }))).toThrow(/BOT_FETCH_ALLOWED/);
  });
});
