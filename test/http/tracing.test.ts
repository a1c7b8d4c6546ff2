import { type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientCredentialsToken, startServerProcess, TEST_SUPER_ADMIN } from '../helpers/server.js';

interface ExportedSpan {
  scope: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
}

interface OtlpJson {
  resourceSpans?: {
    resource?: { attributes?: OtlpAttribute[] };
    scopeSpans?: { scope?: { name?: string }; spans?: { name: string; kind: number; attributes?: OtlpAttribute[] }[] }[];
  }[];
}
type OtlpAttribute = { key: string; value: Record<string, unknown> };

const SERVER_SPAN = 2;

/** A minimal OTLP/HTTP receiver (JSON encoding): what the server exports lands in `spans`. */
function otlpReceiver(spans: ExportedSpan[], services: Set<string>): Promise<Server> {
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      if (request.url === '/v1/traces') collect(JSON.parse(body) as OtlpJson, spans, services);
      response.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

function collect(payload: OtlpJson, spans: ExportedSpan[], services: Set<string>): void {
  for (const resourceSpans of payload.resourceSpans ?? []) {
    const service = attributesOf(resourceSpans.resource?.attributes)['service.name'];
    if (typeof service === 'string') services.add(service);
    for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
      for (const span of scopeSpans.spans ?? []) {
        spans.push({ scope: scopeSpans.scope?.name ?? '', name: span.name, kind: span.kind, attributes: attributesOf(span.attributes) });
      }
    }
  }
}

function attributesOf(list: OtlpAttribute[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map(({ key, value }) => [key, Object.values(value)[0]]));
}

async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 300 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 100));
}

// A server process of its own: tracing starts before the server's modules are imported.
describe('OpenTelemetry traces (OTEL_EXPORTER_OTLP_ENDPOINT)', { timeout: 150_000 }, () => {
  const spans: ExportedSpan[] = [];
  const services = new Set<string>();
  let receiver: Server;
  let child: ChildProcess;
  let url: string;

  beforeAll(async () => {
    receiver = await otlpReceiver(spans, services);
    const server = await startServerProcess({
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
      OTEL_SERVICE_NAME: 'flint-under-test',
    });
    child = server.child;
    url = server.url;
  }, 150_000);
  afterAll(() => {
    child?.kill('SIGKILL');
    receiver?.close();
  });

  const serverSpanOf = (path: string) =>
    spans.find((span) => span.kind === SERVER_SPAN && span.scope.includes('instrumentation-http') && span.attributes['url.path'] === path);

  it('exports a server span for an HTTP request to the OTLP receiver, under OTEL_SERVICE_NAME', async () => {
    expect((await fetch(`${url}/fhir/R4/metadata`)).status).toBe(200);
    await until(() => serverSpanOf('/fhir/R4/metadata') !== undefined);
    expect(serverSpanOf('/fhir/R4/metadata')).toMatchObject({ name: expect.stringMatching(/^GET/) });
    expect(services).toContain('flint-under-test');
  });

  it('leaves the health checks out', async () => {
    expect((await fetch(`${url}/healthcheck`)).status).toBe(200);
    // Spans are exported in the order they end: once the later request's is in, the health check's would be.
    expect((await fetch(`${url}/`)).status).toBe(200);
    await until(() => serverSpanOf('/') !== undefined);
    expect(serverSpanOf('/')).toBeDefined();
    expect(serverSpanOf('/healthcheck')).toBeUndefined();
  });

  it.runIf(process.env.DATABASE_URL)('exports the PostgreSQL statements of a request as spans', async () => {
    const token = await clientCredentialsToken(url, TEST_SUPER_ADMIN.clientId, TEST_SUPER_ADMIN.clientSecret);
    expect((await fetch(`${url}/fhir/R4/Patient?name=traced`, { headers: { Authorization: `Bearer ${token}` } })).status).toBe(200);
    const statement = () => spans.find((span) => span.scope.includes('instrumentation-pg') && span.name.startsWith('pg.query'));
    await until(() => statement() !== undefined);
    expect(statement()).toBeDefined();
  });
});
