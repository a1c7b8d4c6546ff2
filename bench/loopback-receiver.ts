/**
 * The rest-hook receiver of bench/subscriptions.ts, in a process of its own as a receiver on the
 * loopback would be (its CPU is not the server's). Answers 200 to every POST, remembers when the
 * first notification of each resource arrived (epoch ms, comparable across processes), and tells
 * its parent over IPC: `{ port }` once listening; on `'count'` the requests so far and the distinct
 * X-Event-Id values among them (a repeat is an attempt made again); on
 * `'arrivals'` the arrival times by resource id.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const arrivals = new Map<string, number>();
let requests = 0;
const eventIds = new Set<string>();
const now = () => performance.timeOrigin + performance.now();

const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    requests++;
    eventIds.add(String(req.headers['x-event-id']));
    const id = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string }).id;
    if (!arrivals.has(id)) arrivals.set(id, now());
    res.writeHead(200).end();
  });
});
receiver.keepAliveTimeout = 60_000;

receiver.listen(0, '127.0.0.1', () => process.send!({ port: (receiver.address() as AddressInfo).port }));
process.on('message', (message) => {
  if (message === 'count') process.send!({ requests, distinct: eventIds.size });
  else if (message === 'arrivals') process.send!({ arrivals: [...arrivals] });
});
process.on('disconnect', () => process.exit(0));
