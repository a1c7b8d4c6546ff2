import type { AuthService } from '../auth/service.js';
import type { Resource } from '../fhir/types.js';

interface NamedValue {
  name?: string;
  [key: string]: unknown;
}

/**
 * `event.secrets`, as Medplum builds it: the Project's `systemSecret` entries for a Bot marked
 * `system`, then the Project's `secret` entries (a `secret` wins over a `systemSecret` of the same
 * name), keyed by name ({ name, valueString, ... }). A Bot has no secret element of its own in the
 * definitions (one written with `secret` is refused), so `system` is its only say in what it gets.
 */
export async function botSecrets(auth: AuthService, bot: Resource): Promise<Record<string, NamedValue>> {
  const secrets: Record<string, NamedValue> = {};
  const project = (await auth.readCurrent([{ resourceType: 'Project', id: bot.meta!.project! }])).values().next().value;
  const settings = project?.text ? (JSON.parse(project.text) as { secret?: NamedValue[]; systemSecret?: NamedValue[] }) : {};
  const system = (bot as { system?: boolean }).system === true ? (settings.systemSecret ?? []) : [];
  for (const entry of [...system, ...(settings.secret ?? [])]) {
    if (typeof entry.name === 'string') secrets[entry.name] = entry;
  }
  return secrets;
}
