/**
 * The composition root's list of what the server's capabilities plug into shared mechanisms: the
 * built-in operations, the write hooks, and the preparers and checks every write runs. Each lives
 * with its capability; nothing registers itself on import, so what runs is what this file names.
 */
import { asyncJobCancelOperation } from './admin/async-job.js';
import { expungeOperation, projectExpungeOperation } from './admin/expunge.js';
import { projectOperations } from './admin/project-operations.js';
import { setAccountsOperation } from './admin/set-accounts.js';
import { rotateSecretOperation } from './admin/rotate-secret.js';
import { updateEmailOperation } from './admin/update-email.js';
import { smartLaunchOperation } from './admin/smart-launch.js';
import { storedJwksCheck } from './auth/stored-jwks.js';
import { uniquenessWriteHooks } from './auth/uniqueness.js';
import { botDeployOperation } from './bots/deploy.js';
import { exportOperation, groupExportOperation, patientExportOperation } from './bulk/export-operation.js';
import { patientEverythingOperation } from './clinical/everything.js';
import { graphOperation } from './clinical/graph.js';
import { patientSummaryOperation } from './ips/summary.js';
import { evaluateMeasureOperation } from './measure/evaluate-measure.js';
import { expandProfileOperation } from './profiles/expand-profile.js';
import { registerBuiltinOperations, type Operation } from './operations/registry.js';
import { extractOperation } from './sdc/extract.js';
import { reindexOperation, searchParameterWriteHook } from './search/administration.js';
import { registerWriteHook } from './storage/write-hooks.js';
import { registerProfileBindingCheck, registerResourceCheck } from './validation/resource-checks.js';
import { bindingCheck, profileBindingCheck } from './terminology/binding-check.js';
import { terminologyWriteHooks } from './terminology/indexing.js';
import { terminologyOperations } from './terminology/operations.js';
import { validateOperation } from './validate/validate-operation.js';
import { profileCheck, snapshotPreparer } from './validation/profiles/check.js';
import { registerResourcePreparer } from './validation/resource-preparers.js';
import { prepareSubscription } from './events/subscription.js';
import { resendOperation } from './events/resend.js';
import { getWsBindingTokenOperation } from './events/websocket/binding-operation.js';

/** The operations the committed GraphQL schema has fields for (tests may register more, REST-only). */
export const builtinOperations: readonly Operation[] = [
  ...terminologyOperations,
  evaluateMeasureOperation,
  ...projectOperations,
  reindexOperation,
  exportOperation,
  patientExportOperation,
  groupExportOperation,
  asyncJobCancelOperation,
  // Before expungeOperation, which applies to every type: on a Project this one is picked.
  projectExpungeOperation,
  expungeOperation,
  setAccountsOperation,
  rotateSecretOperation,
  updateEmailOperation,
  smartLaunchOperation,
  patientEverythingOperation,
  graphOperation,
  patientSummaryOperation,
  extractOperation,
  validateOperation,
  expandProfileOperation,
  resendOperation,
  getWsBindingTokenOperation,
  botDeployOperation,
];

let registered = false;

/** Installs the built-in operations and write hooks once per process (every server shares them). */
export function registerBuiltins(): void {
  if (registered) return;
  registered = true;
  registerBuiltinOperations(builtinOperations);
  for (const [resourceType, hook] of [...uniquenessWriteHooks, ...terminologyWriteHooks, searchParameterWriteHook]) {
    registerWriteHook(resourceType, hook);
  }
  registerResourceCheck(bindingCheck);
  registerResourceCheck(storedJwksCheck);
  registerResourcePreparer('StructureDefinition', snapshotPreparer);
  registerResourcePreparer('Subscription', prepareSubscription);
  registerResourceCheck(profileCheck);
  registerProfileBindingCheck(profileBindingCheck);
}
