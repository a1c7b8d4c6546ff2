import { afterAll, describe, expect, it } from 'vitest';
import { refusedEndpoint } from '../../src/net/outbound-addresses.js';
import { outboundRequest, RefusedAddressError } from '../../src/net/outbound-request.js';
import { startReceiver } from '../helpers/receiver.js';

describe('rest-hook endpoints on private networks', () => {
  it.each(['http://127.0.0.1:8080/x', 'http://10.1.2.3/x', 'http://172.20.0.1/x', 'http://192.168.1.1/x', 'http://169.254.169.254/latest', 'http://[::1]/x', 'http://[fe80::1]/x', 'http://[::ffff:127.0.0.1]/x', 'http://0.0.0.0/x'])(
    'refuses %s by default',
    (url) => {
      expect(refusedEndpoint(new URL(url), false)).toMatch(/loopback, private or link-local/);
    },
  );

  it('allows a public address', () => {
    expect(refusedEndpoint(new URL('https://93.184.216.34/hook'), false)).toBeUndefined();
  });

  it('allows a private address when the configuration does', () => {
    expect(refusedEndpoint(new URL('http://127.0.0.1:8080/x'), true)).toBeUndefined();
  });
});

describe('the connection of an outbound request', () => {
  const receiverStarted = startReceiver([200]);
  afterAll(async () => (await receiverStarted).close());
  /** The receiver's URL with the name `localhost`, which resolves to loopback when the connection is made. */
  const byName = async () => (await receiverStarted).url.replace('127.0.0.1', 'localhost');
  const post = async (allowPrivate: boolean) =>
    outboundRequest(new URL(await byName()), { method: 'POST', headers: {}, body: '{}', readBody: false, allowPrivate, signal: AbortSignal.timeout(5000) });

  it('refuses a name that resolves to a loopback address, and sends nothing', async () => {
    await expect(post(false)).rejects.toThrow(RefusedAddressError);
    await expect(post(false)).rejects.toThrow(/localhost resolves to .*loopback/);
    expect((await receiverStarted).received).toHaveLength(0);
  });

  it('connects to it when private addresses are allowed', async () => {
    const receiver = await receiverStarted;
    const before = receiver.received.length;
    expect((await post(true)).status).toBe(200);
    expect(receiver.received).toHaveLength(before + 1);
  });
});
