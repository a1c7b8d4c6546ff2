import { allOk } from '../../fhir/outcome.js';
import { searchOfHeader } from '../conditional.js';
import { preferReturn } from '../negotiation.js';
import { outcomeResponse } from '../responses.js';
import type { FhirRequest, FhirResponse } from '../types.js';

/**
 * Conditional creates of one transaction with the same type and criteria (`ifNoneExist`) are one
 * resource: the first entry creates it (or finds its match) and the others answer with it, their
 * fullUrls naming it too, as HAPI FHIR does. Each searched before any wrote, they would otherwise
 * all create, leaving duplicates that every later conditional create refuses as ambiguous; done
 * one after another, as a transaction's outcome must read, the later ones find the first's
 * resource and create nothing. Their bodies beyond the first are not written, as when a
 * conditional create finds its match.
 */

/** The resource a conditional create writes, named by its type and criteria (`Patient?identifier=x`); undefined for other entries. */
export function conditionalCreateTarget(request: FhirRequest): string | undefined {
  if (request.method !== 'POST') return undefined;
  const ifNoneExist = request.header('if-none-exist');
  return ifNoneExist === undefined ? undefined : `${request.path}?${searchOfHeader(ifNoneExist)}`;
}

/** The first conditional create of a target: its entry, and the `Type/id` it creates or finds. */
export interface FirstCreate {
  readonly index: number;
  readonly reference: string;
}

/** The later conditional creates of a target, each with the first of it, in the transaction's order. */
export class SameCreates {
  private readonly firsts = new Map<string, FirstCreate>();
  readonly later = new Map<number, FirstCreate>();

  /** The first entry of `target`, when one came before. */
  firstOf(target: string): FirstCreate | undefined {
    return this.firsts.get(target);
  }

  /** Notes the resource the first entry of `target` creates or finds. */
  noteFirst(target: string, first: FirstCreate): void {
    this.firsts.set(target, first);
  }

  /** Notes a later entry of a target that `first` already writes. */
  noteLater(index: number, first: FirstCreate): void {
    this.later.set(index, first);
  }
}

/**
 * A later entry's answer, from the first's: `200 OK`, as a conditional create that finds its match
 * answers, with the first's resource, Location and version.
 */
export function laterAnswer(request: FhirRequest, first: FirstCreate, firstAnswer: FhirResponse): FhirResponse {
  const headers = { ...firstAnswer.headers };
  if (preferReturn(request.header('prefer')) === 'OperationOutcome') {
    return outcomeResponse(allOk(`${first.reference} matches If-None-Exist, as Bundle.entry[${first.index}] wrote it: nothing created`), 200, headers);
  }
  return { ...firstAnswer, status: 200, headers };
}
