import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import type { Config } from '../../config.js';
import { SubscriptionSocket, type SessionServices } from './session.js';

export const WEBSOCKET_PATH = '/ws/subscriptions-r4';

/**
 * Serves `/ws/subscriptions-r4` on the server's own HTTP port. An upgrade takes a place only when
 * the hub has one (WS_MAX_CONNECTIONS, a quarter of them for sockets not yet bound); otherwise it
 * is answered 503 before any WebSocket work, as is any other upgrade path with 404. Messages
 * larger than WS_MAX_MESSAGE_BYTES close the socket (1009).
 */
export function serveWebSockets(server: Server, services: SessionServices, config: Pick<Config, 'wsMaxMessageBytes'>): { close(): Promise<void> } {
  const wss = new WebSocketServer({ noServer: true, maxPayload: config.wsMaxMessageBytes, perMessageDeflate: false });
  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = (request.url ?? '').split('?')[0];
    if (path !== WEBSOCKET_PATH) return answer(socket, 404, 'Not Found');
    if (!services.hub.admitConnection()) return answer(socket, 503, 'Service Unavailable', { 'Retry-After': '5' });
    let accepted = false;
    socket.once('close', () => {
      if (!accepted) services.hub.abandoned();
    });
    wss.handleUpgrade(request, socket, head, (ws) => {
      accepted = true;
      void new SubscriptionSocket(ws, services);
    });
  };
  server.on('upgrade', onUpgrade);
  return {
    close: async () => {
      server.off('upgrade', onUpgrade);
      for (const client of wss.clients) client.close(1001, 'server stopping');
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

function answer(socket: Duplex, status: number, reason: string, headers: Record<string, string> = {}): void {
  const lines = [`HTTP/1.1 ${status} ${reason}`, 'Connection: close', 'Content-Length: 0', ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`)];
  socket.end(`${lines.join('\r\n')}\r\n\r\n`);
}
