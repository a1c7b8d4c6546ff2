import { connect, type Socket } from 'node:net';
import type { TestServer } from './server.js';

/** A socket that has sent `request` to `api` and reads nothing of its answer (tests of clients that leave). */
export async function sentRequest(api: TestServer, request: string): Promise<Socket> {
  const { hostname, port } = new URL(api.url);
  const socket: Socket = await new Promise((resolve, reject) => {
    const opened = connect({ host: hostname, port: Number(port) }, () => resolve(opened));
    opened.once('error', reject);
  });
  socket.write(request);
  return socket;
}
