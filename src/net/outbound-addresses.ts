import { lookup, type LookupAddress, type LookupAllOptions, type LookupOneOptions } from 'node:dns';
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

/** A connection refused because its host is, or resolves to, an address outbound calls may not reach. */
export class RefusedAddressError extends Error {
  readonly code = 'EREFUSEDADDRESS';
}

function refusal(host: string, address: string): string {
  const named = host === address ? host : `${host} resolves to ${address},`;
  return `${named} a loopback, private or link-local address (OUTBOUND_ALLOW_PRIVATE_ADDRESSES allows it)`;
}

/**
 * Why `url` may not be called, or undefined when it may, as far as its host is an address. A
 * name is checked when the connection is made (checkedLookup): the address checked is the one
 * connected to, so a name that changes its answer in between (DNS rebinding) gains nothing.
 */
export function refusedEndpoint(url: URL, allowPrivate: boolean): string | undefined {
  if (allowPrivate) return undefined;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return isIP(host) && isRefused(host) ? refusal(host, host) : undefined;
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * The `lookup` of outbound connections (net.connect's option): resolves the name as Node would,
 * then refuses the connection when any address it resolves to is refused.
 */
export function checkedLookup(allowPrivate: boolean) {
  return (hostname: string, options: LookupOneOptions | LookupAllOptions, callback: LookupCallback): void => {
    lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      const blocked = allowPrivate ? undefined : addresses.find((entry) => isRefused(entry.address));
      if (blocked) return callback(new RefusedAddressError(refusal(hostname, blocked.address)), []);
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0].address, addresses[0].family);
    });
  };
}
