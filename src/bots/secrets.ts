import type { AuthService } from '../auth/service.js';
import type { Resource } from '../fhir/types.js';

interface NamedValue {
  name?: string;
  [key: string]: unknown;
}

/**
 * `event.secrets`: the Project's `secret` settings, then the Bot's own (a Bot's wins), keyed by
 * name as Medplum passes them ({ name, valueString, ... }).
 */
export async function botSecrets(auth: AuthService, bot: Resource): Promise<Record<string, NamedValue>> {
  const secrets: Record<string, NamedValue> = {};
  const project = (await auth.readCurrent([{ resourceType: 'Project', id: bot.meta!.project! }])).values().next().value;
  const projectSecrets = project?.text ? ((JSON.parse(project.text) as { secret?: NamedValue[] }).secret ?? []) : [];
  for (const entry of [...projectSecrets, ...(((bot as { secret?: NamedValue[] }).secret) ?? [])]) {
    if (typeof entry.name === 'string') secrets[entry.name] = entry;
  }
  return secrets;
}
