import { errors } from '../fhir/outcome.js';
import type { Coding } from '../fhir/types.js';
import { coreOperationDefinition } from '../operations/definition.js';
import type { Operation } from '../operations/registry.js';
import { requireSystem, systemOfResource } from './systems.js';
import { type SystemRef } from './types.js';

interface SubsumesInput {
  codeA?: string;
  codeB?: string;
  system?: string;
  version?: string;
  codingA?: Coding;
  codingB?: Coding;
}

/** CodeSystem/$subsumes (R4): equivalent, subsumes, subsumed-by or not-subsumed, from the hierarchy. */
export const subsumesOperation: Operation<SubsumesInput, { outcome: string }> = {
  definition: coreOperationDefinition('CodeSystem-subsumes'),
  async handler(input, request) {
    const codeA = input.codingA?.code ?? input.codeA;
    const codeB = input.codingB?.code ?? input.codeB;
    if (codeA === undefined || codeB === undefined) {
      throw errors.invalid('$subsumes needs codeA and codeB (or codingA and codingB)', 'Parameters.parameter');
    }
    let system: SystemRef;
    if (request.level === 'instance') {
      system = await systemOfResource(request.db, await request.ctx.repo.readResource('CodeSystem', request.id!), request.ctx);
    } else {
      const url = input.system ?? input.codingA?.system ?? input.codingB?.system;
      if (url === undefined) throw errors.invalid('$subsumes needs system (or codings with a system)', 'Parameters.parameter');
      if (input.codingA?.system && input.codingB?.system && input.codingA.system !== input.codingB.system) {
        throw errors.invalid('codingA and codingB must be from the same code system', 'Parameters.parameter');
      }
      system = await requireSystem(request.ctx, request.db, url, input.version);
    }
    const rows = await request.db.query<{ code: string; ancestors: string | null }>(
      `SELECT c.code, (SELECT json_agg(x.ancestor)::text FROM terminology_closure x
                       WHERE x."systemId" = c."systemId" AND x.descendant = c.code) AS ancestors
       FROM terminology_concept c WHERE c."systemId" = $1::uuid AND c.code = ANY($2::text[])`,
      [system.id, [codeA, codeB]],
    );
    const ancestors = new Map(rows.map((row) => [row.code, new Set(JSON.parse(row.ancestors ?? '[]') as string[])]));
    for (const code of [codeA, codeB]) {
      if (!ancestors.has(code)) throw errors.notFound(`Code "${code}" not found in code system ${system.url}`);
    }
    if (codeA === codeB) return { outcome: 'equivalent' };
    if (ancestors.get(codeB)!.has(codeA)) return { outcome: 'subsumes' };
    if (ancestors.get(codeA)!.has(codeB)) return { outcome: 'subsumed-by' };
    return { outcome: 'not-subsumed' };
  },
};
