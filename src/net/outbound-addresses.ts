import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/**
 * Addresses the server's outbound calls on a project's behalf (rest-hook deliveries, bots' fetch)
 * may not reach unless OUTBOUND_ALLOW_PRIVATE_ADDRESSES allows it: loopback, private, link-local,
 * carrier-grade NAT, unspecified and multicast ranges, which would let a project probe the
 * server's own network. One rule for both.
 */
const refused = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16],
  ['172.16.0.0', 12], ['192.168.0.0', 16], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) {
  refused.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8]] as const) {
  refused.addSubnet(network, prefix, 'ipv6');
}

function isRefused(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return refused.check(mapped[1], 'ipv4');
  return refused.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');
}

/**
 * Why `url` may not be called, or undefined when it may: every address its host resolves to must
 * be public. (The request resolves the name again; a name that changes its answer in between is
 * not caught here.)
 */
export async function refusedEndpoint(url: URL, allowPrivate: boolean): Promise<string | undefined> {
  if (allowPrivate) return undefined;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : (await lookup(host, { all: true })).map((entry) => entry.address);
  } catch {
    return `the host ${host} could not be resolved`;
  }
  const blocked = addresses.find(isRefused);
  return blocked === undefined ? undefined : `${host} resolves to ${blocked}, a loopback, private or link-local address (OUTBOUND_ALLOW_PRIVATE_ADDRESSES allows it)`;
}
