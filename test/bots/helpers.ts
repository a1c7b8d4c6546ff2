import { expect } from 'vitest';
import type { ProjectClient } from '../helpers/server.js';

/** Creates a Bot in the client's project and deploys `code` to it ($deploy, Medplum's plain JSON body). */
export async function deployedBot(client: ProjectClient, code: string, extra: Record<string, unknown> = {}): Promise<string> {
  const created = await client.post('/Bot', { resourceType: 'Bot', name: 'test bot', ...extra });
  expect(created.status).toBe(201);
  const id = created.body.id as string;
  const deployed = await client.post(`/Bot/${id}/$deploy`, { code, filename: 'index.js' }, { 'Content-Type': 'application/json' });
  expect(deployed.status).toBe(200);
  return id;
}

/** POST Bot/{id}/$execute with a JSON body. */
export function execute(client: ProjectClient, botId: string, input: unknown, contentType = 'application/json') {
  const body = typeof input === 'string' ? input : JSON.stringify(input);
  return client.request('POST', `/Bot/${botId}/$execute`, body, { 'Content-Type': contentType });
}

export function diagnostics(body: { issue?: { details?: { text?: string }; diagnostics?: string }[] }): string {
  return (body.issue ?? []).map((issue) => issue.details?.text ?? issue.diagnostics ?? '').join(' ');
}
