import { allOk, errors } from '../fhir/outcome.js';
import type { Bot } from '../fhir/resources.js';
import type { OperationDefinition } from '../operations/definition.js';
import type { Operation } from '../operations/registry.js';
import { botMembership } from './membership.js';

export const botDeployDefinition: OperationDefinition = {
  resourceType: 'OperationDefinition',
  id: 'Bot-deploy',
  url: 'https://flint.dev/fhir/OperationDefinition/Bot-deploy',
  name: 'BotDeploy',
  status: 'active',
  kind: 'operation',
  code: 'deploy',
  description: "Stores a Bot's executable JavaScript as a Binary referenced by Bot.executableCode: the version $execute runs",
  resource: ['Bot'],
  system: false,
  type: false,
  instance: true,
  affectsState: true,
  parameter: [
    { use: 'in', name: 'code', min: 1, max: '1', type: 'string', documentation: 'The JavaScript to run (CommonJS exports.handler, or an ES module exporting handler)' },
    { use: 'in', name: 'filename', min: 0, max: '1', type: 'string', documentation: 'Name of the file the code was built into (kept as executableCode.title)' },
    { use: 'out', name: 'return', min: 1, max: '1', type: 'OperationOutcome', documentation: 'All OK once the code is the version that runs' },
  ],
};

interface DeployInput {
  code: string;
  filename?: string;
}

/**
 * `Bot/[id]/$deploy` (Medplum's shape: a plain `{ code, filename }` body, or Parameters): the
 * code becomes a Binary, the Bot's `executableCode` points at it, and the Bot's membership exists.
 */
export const botDeployOperation: Operation<DeployInput> = {
  definition: botDeployDefinition,
  acceptsPlainJsonBody: true,
  rollsBack: true,
  async handler(input, { ctx, id }) {
    if (input.code.trim() === '') throw errors.invalid('"code" must hold the JavaScript to deploy', 'Parameters.parameter');
    const bot = (await ctx.repo.readResource('Bot', id!)) as Bot;
    const filename = input.filename ?? 'index.js';
    await ctx.inTransaction(async (tx) => {
      const binary = await tx.repo.createBinary('application/javascript', Buffer.from(input.code, 'utf8'), {});
      const executableCode = { contentType: 'application/javascript', url: `Binary/${binary.resource.id}`, title: filename };
      await tx.repo.updateResource('Bot', bot.id!, { ...bot, executableCode });
    });
    await botMembership(ctx.auth, bot.meta!.project!, bot.id!);
    return { return: allOk(`Deployed ${filename} to Bot/${bot.id}`) };
  },
};
