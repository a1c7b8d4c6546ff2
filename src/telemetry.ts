import { register } from 'node:module';

/** What main.ts keeps of the tracing: the spans not exported yet are sent on shutdown. */
export interface Tracing {
  shutdown(): Promise<void>;
}

/**
 * OpenTelemetry traces through the official Node SDK, started by main.ts before it imports the
 * server, and only when OTEL_EXPORTER_OTLP_ENDPOINT is set: without it nothing here is loaded.
 * Incoming HTTP requests and PostgreSQL statements become spans; the exporter, its protocol
 * (`OTEL_EXPORTER_OTLP_PROTOCOL`, http/protobuf by default), the sampler and the batching are the
 * SDK's standard OTEL_* settings.
 */
export async function startTracing(): Promise<Tracing> {
  // The server is ES modules: the instrumentations patch `http` and `pg` through this loader hook
  // as they are imported, so it goes first, limited to the modules they patch.
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url, {
    data: { include: ['http', 'https', 'node:http', 'node:https', 'pg', 'pg-pool'] },
  });
  const [{ NodeSDK }, { HttpInstrumentation }, { PgInstrumentation }] = await Promise.all([
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/instrumentation-http'),
    import('@opentelemetry/instrumentation-pg'),
  ]);
  const sdk = new NodeSDK({
    serviceName: process.env.OTEL_SERVICE_NAME || 'flint',
    instrumentations: [
      // Load balancers poll the health check every few seconds: spans of it would bury the rest.
      new HttpInstrumentation({ ignoreIncomingRequestHook: (request) => request.url === '/healthcheck' }),
      new PgInstrumentation(),
    ],
  });
  sdk.start();
  return sdk;
}
