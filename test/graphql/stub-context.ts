import { pino } from 'pino';
import { loadConfig } from '../../src/config.js';
import type { RequestContext } from '../../src/operations/context.js';
import type { Resource } from '../../src/fhir/types.js';
import type { ResourceRepository } from '../../src/storage/types.js';

/** Log lines written through a stub context's logger, parsed. */
export type LogLine = Record<string, unknown> & { msg?: string; err?: { message?: string } };

export interface StubOptions {
  readResource?: (resourceType: string, id: string) => Promise<Resource>;
  healthy?: boolean;
}

/**
 * A RequestContext for in-process tests of the GraphQL layer alone: only the services the
 * resolvers call are real functions. (The HTTP end-to-end tests use the server's real context.)
 */
export function stubContext(options: StubOptions = {}): { context: RequestContext; logs: LogLine[] } {
  const logs: LogLine[] = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => void logs.push(JSON.parse(line) as LogLine) });
  const repo: Pick<ResourceRepository, 'readResource'> = {
    readResource: options.readResource ?? (async () => Promise.reject(new Error('readResource not stubbed'))),
  };
  const context: RequestContext = {
    requestId: 'test-request',
    identity: { projectId: 'test-project', superAdmin: false },
    // The GraphQL layer calls readResource only; the rest of ResourceRepository is not needed here.
    repo: repo as ResourceRepository,
    databaseHealth: { kind: 'pglite', healthy: async () => options.healthy ?? true },
    // No SQL in these tests: the resolvers under test call the repository stub only.
    database: {} as RequestContext['database'],
    reads: {} as RequestContext['reads'],
    log,
    config: loadConfig({}),
    // The GraphQL layer never creates accounts or tokens.
    auth: {} as RequestContext['auth'],
    inTransaction: (work) => work(context),
  };
  return { context, logs };
}
