import { SERVER_VERSION } from '../fhir/software.js';
import { isDatabaseHealthy } from '../access/context.js';
import type { HonoContext } from './route.js';

export async function healthcheckHandler(c: HonoContext): Promise<Response> {
  const db = c.get('services').db;
  const ok = await isDatabaseHealthy(db);
  const admission = c.get('admission').load();
  return Response.json({ ok, version: SERVER_VERSION, database: { kind: db.kind, ok }, admission }, { status: ok ? 200 : 503 });
}
