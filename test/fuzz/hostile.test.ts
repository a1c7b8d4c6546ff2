import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
import { explainsRefusal, healthCheckStatus, HOSTILE_SHAPES, sendShape, shapeTarget, type ShapeTarget } from './shapes.js';

/**
 * Each hostile shape (shapes.ts), sent once over HTTP: a 4xx that explains itself (or 2xx for
 * the shapes that are valid after all), and the server still answers its health check.
 */
const api = await useTestServer();
const database = api.server.services.db.kind;

async function newTarget(): Promise<ShapeTarget> {
  const client = api.newProject();
  const { clientId, clientSecret } = await api.credentialsOf(client);
  return shapeTarget({ baseUrl: api.url, database, clientId, clientSecret, token: await client.token() });
}

describe(`hostile requests (${database})`, () => {
  for (const shape of HOSTILE_SHAPES) {
    it(shape.name, { timeout: 120_000 }, async () => {
      const answer = await sendShape(await newTarget(), shape);
      const seen = `${answer.status} ${answer.text.slice(0, 300)}`;

      const expected = shape.expected(database);
      if (expected === 'accepted') {
        expect(answer.status, seen).toBeGreaterThanOrEqual(200);
        expect(answer.status, seen).toBeLessThan(300);
      } else if (expected === 'field-refused') {
        expect(answer.status, seen).toBe(200);
        const { errors } = answer.body as { errors?: { extensions?: { resource?: { resourceType?: string } } }[] };
        expect(errors?.[0]?.extensions?.resource?.resourceType, seen).toBe('OperationOutcome');
      } else {
        expect(answer.status, seen).toBeGreaterThanOrEqual(400);
        expect(answer.status, seen).toBeLessThan(500);
        expect(explainsRefusal(shape.answers, answer.body), seen).toBe(true);
      }
      expect(await healthCheckStatus(api.url)).toBe(200);
    });
  }
});
