import type { RequestContext } from '../../operations/context.js';
import { errors } from '../../fhir/outcome.js';
import { isRecord } from '../../fhir/types.js';
import { assertJsonContentType } from '../negotiation.js';
import { requiredJsonBody } from '../request-body.js';
import type { EntryRouter, FhirRequest, FhirResponse } from '../types.js';
import { runBatch } from './batch.js';
import { runTransaction } from './transaction.js';

/** `POST [base]` with a batch or transaction Bundle (http.html 3.1.0.11). */
export function bundleHandler(router: EntryRouter) {
  return async (req: FhirRequest, _params: unknown, ctx: RequestContext): Promise<FhirResponse> => {
    assertJsonContentType(req.header('content-type'));
    const bundle = await requiredJsonBody(req);
    if (!isRecord(bundle) || bundle.resourceType !== 'Bundle') {
      throw errors.invalid('POST to the FHIR base takes a Bundle of type batch or transaction', 'Bundle');
    }
    const entries = bundle.entry ?? [];
    if (!Array.isArray(entries)) throw errors.invalid('Bundle.entry must be an array', 'Bundle.entry');
    if (entries.length > ctx.config.maxBundleEntries) {
      throw errors.tooLarge(`The Bundle has ${entries.length} entries; at most ${ctx.config.maxBundleEntries} are accepted (MAX_BUNDLE_ENTRIES)`);
    }
    const prefer = req.header('prefer');
    switch (bundle.type) {
      case 'batch':
        return runBatch(router, ctx, entries, prefer);
      case 'transaction':
        return runTransaction(router, ctx, entries, prefer);
      default:
        throw errors.invalid(
          `Bundle.type must be batch or transaction to be processed, not ${JSON.stringify(bundle.type ?? null)}`,
          'Bundle.type',
        );
    }
  };
}
