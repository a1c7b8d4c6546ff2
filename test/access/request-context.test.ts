import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { createRequestContext } from '../../src/access/context.js';
import type { RequestContext, Services } from '../../src/operations/context.js';
import { patientBody, useTestServer } from '../helpers/server.js';

/**
 * The request context without HTTP (src/access/context.ts): what handlers rely on beside the
 * repository, its log lines, transactions and the database health. Each test makes its own project.
 */

const api = await useTestServer();

/** The server's services with a logger whose lines the test reads. */
function servicesLoggingTo(lines: Record<string, unknown>[]): Services {
  const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { ...api.server.services, log };
}

function adminContext(services: Services, requestId: string): RequestContext {
  return createRequestContext(services, { projectId: randomUUID(), superAdmin: false, projectAdmin: true }, requestId);
}

describe('a request context', () => {
  it('writes its log lines with the request id, in a transaction too', async () => {
    const lines: Record<string, unknown>[] = [];
    const ctx = adminContext(servicesLoggingTo(lines), 'context-log');
    ctx.log.info('outside');
    await ctx.inTransaction(async (inner) => {
      inner.log.info('inside');
    });
    expect(lines.map((line) => [line.reqId, line.msg])).toEqual([
      ['context-log', 'outside'],
      ['context-log', 'inside'],
    ]);
  });

  it('runs nested transaction work in the open transaction, and rolls back all of it on an error', async () => {
    const ctx = adminContext(api.server.services, randomUUID());
    expect(ctx.transaction).toBeUndefined();
    let createdId = '';
    const failed = ctx.inTransaction(async (inner) => {
      expect(inner.transaction).toBeDefined();
      await inner.inTransaction(async (nested) => {
        expect(nested.transaction).toBe(inner.transaction);
        createdId = (await nested.repo.createResource('Patient', patientBody())).resource.id!;
      });
      throw new Error('stop');
    });
    await expect(failed).rejects.toThrow('stop');
    expect(createdId).not.toBe('');
    await expect(ctx.repo.readResource('Patient', createdId)).rejects.toMatchObject({ status: 404 });
  });

  it('keeps the identity, request id and services it was made with, inside a transaction too', async () => {
    const ctx = adminContext(api.server.services, 'context-fields');
    const inner = await ctx.inTransaction(async (work) => work);
    for (const context of [ctx, inner]) {
      expect(context.requestId).toBe('context-fields');
      expect(context.identity).toBe(ctx.identity);
      expect(context.config).toBe(api.server.services.config);
      expect(context.auth).toBe(api.server.services.auth);
    }
  });

  it('tells whether the database answers', async () => {
    const ctx = adminContext(api.server.services, randomUUID());
    expect(ctx.databaseHealth.kind).toBe(api.server.services.db.kind);
    expect(await ctx.databaseHealth.healthy()).toBe(true);
  });
});
