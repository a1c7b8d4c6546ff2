import { describe, expect, it } from 'vitest';
import { refusedEndpoint } from '../../src/net/outbound-addresses.js';

describe('rest-hook endpoints on private networks', () => {
  it.each(['http://127.0.0.1:8080/x', 'http://10.1.2.3/x', 'http://172.20.0.1/x', 'http://192.168.1.1/x', 'http://169.254.169.254/latest', 'http://[::1]/x', 'http://[fe80::1]/x', 'http://[::ffff:127.0.0.1]/x', 'http://0.0.0.0/x'])(
    'refuses %s by default',
    async (url) => {
      expect(await refusedEndpoint(new URL(url), false)).toMatch(/loopback, private or link-local/);
    },
  );

  it('allows a public address', async () => {
    expect(await refusedEndpoint(new URL('https://93.184.216.34/hook'), false)).toBeUndefined();
  });

  it('allows a private address when the configuration does', async () => {
    expect(await refusedEndpoint(new URL('http://127.0.0.1:8080/x'), true)).toBeUndefined();
  });
});
