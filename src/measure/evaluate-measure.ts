import { CLINICAL_DATE_PARAMETER } from '../fhir/clinical-dates.js';
import { ID_SOURCE } from '../fhir/ids.js';
import { errors } from '../fhir/outcome.js';
import { type Expression, type Measure, type MeasureReport, type MeasureReportGroup, type MeasureReportGroupStratifier } from '../fhir/resources.js';
import { asResourceOf, readTyped } from '../fhir/typed-resources.js';
import { search, searchServicesFor } from '../search/service.js';
import { findByUrl } from '../terminology/resources.js';
import { coreOperationDefinition } from '../operations/definition.js';
import type { Operation, OperationRequest } from '../operations/registry.js';

interface EvaluateInput {
  periodStart: string;
  periodEnd: string;
  measure?: string;
  reportType?: string;
  subject?: string;
}

const FHIR_QUERY = 'application/x-fhir-query';

/**
 * Measure/$evaluate-measure (SPEC 2.7, 4.7): each population's `application/x-fhir-query`
 * criteria is run through the search engine in the caller's project and counted; the
 * MeasureReport is saved and returned (201). A stratifier's criteria is a query string (for
 * example `gender=female`) added to each population's query: one stratum per stratifier.
 */
export const evaluateMeasureOperation: Operation<EvaluateInput, { return: MeasureReport }> = {
  // It saves a MeasureReport, so it is not available by GET.
  definition: { ...coreOperationDefinition('Measure-evaluate-measure'), affectsState: true },
  successStatus: 201,
  // Its one write, the MeasureReport, goes through the request's repository.
  rollsBack: true,
  async handler(input, request) {
    if (input.periodEnd < input.periodStart) {
      throw errors.invalid('periodEnd must not be before periodStart', 'Parameters.parameter');
    }
    const measure = await measureOf(input, request);
    if (measure.library?.length) {
      throw errors.invalid(`Measure/${measure.id} uses a Library: only ${FHIR_QUERY} criteria are supported`, 'Measure.library');
    }
    const reportGroups: MeasureReportGroup[] = [];
    for (const [g, group] of (measure.group ?? []).entries()) {
      const populations = group.population ?? [];
      // Populations are independent counts: run them together (PostgreSQL runs them in parallel).
      const queries = populations.map((population, p) => parseCriteria(population.criteria, `Measure.group[${g}].population[${p}].criteria`));
      const counts = await Promise.all(queries.map((query) => count(request, query, input)));
      const counted = populations.map((population, p) => ({ ...(population.code ? { code: population.code } : {}), count: counts[p] }));
      const stratifier: MeasureReportGroupStratifier[] = [];
      for (const [s, strat] of (group.stratifier ?? []).entries()) {
        const at = `Measure.group[${g}].stratifier[${s}].criteria`;
        const extra = strat.criteria?.expression ?? '';
        if (strat.criteria?.language !== FHIR_QUERY) throw onlyFhirQuery(at, strat.criteria?.language);
        const stratumParams = [...new URLSearchParams(extra.includes('?') ? extra.slice(extra.indexOf('?') + 1) : extra)];
        // Like the populations, a stratum's counts are independent: run them together.
        const population = await Promise.all(
          populations.map(async (pop, p) => ({
            ...(pop.code ? { code: pop.code } : {}),
            count: await count(request, { type: queries[p].type, params: [...queries[p].params, ...stratumParams] }, input),
          })),
        );
        // MeasureReport.group.stratifier.code repeats (0..*), Measure's does not (0..1).
        stratifier.push({ ...(strat.code ? { code: [strat.code] } : {}), stratum: [{ value: { text: extra }, population }] });
      }
      reportGroups.push({ ...(group.code ? { code: group.code } : {}), population: counted, ...(stratifier.length > 0 ? { stratifier } : {}) });
    }
    const report: MeasureReport = {
      resourceType: 'MeasureReport',
      status: 'complete',
      type: 'summary',
      measure: measure.url ?? `Measure/${measure.id}`,
      date: new Date().toISOString(),
      period: { start: input.periodStart, end: input.periodEnd },
      group: reportGroups,
    };
    const saved = await request.ctx.repo.createResource('MeasureReport', report);
    return { return: asResourceOf(saved.resource, 'MeasureReport') };
  },
};

async function measureOf(input: EvaluateInput, request: OperationRequest): Promise<Measure> {
  if (request.level === 'instance') return readTyped(request.ctx.repo, 'Measure', request.id!);
  if (input.measure === undefined) {
    throw errors.invalid('Give the measure (its url, or Measure/<id>), or call the operation on a Measure instance', 'Parameters.parameter');
  }
  const local = new RegExp(`^Measure/(${ID_SOURCE})$`).exec(input.measure);
  if (local) return readTyped(request.ctx.repo, 'Measure', local[1]);
  const found = await findByUrl(request.ctx, request.db, 'Measure', input.measure);
  if (!found) throw errors.notFound(`Measure ${input.measure} not found`);
  return found;
}

function parseCriteria(criteria: Expression | undefined, at: string): { type: string; params: [string, string][] } {
  if (criteria?.language !== FHIR_QUERY) throw onlyFhirQuery(at, criteria?.language);
  const expression = (criteria.expression ?? '').trim();
  const match = /^([A-Z][A-Za-z]+)(?:\?(.*))?$/.exec(expression);
  if (!match) {
    throw errors.invalid(`${at}.expression must be a FHIR query such as Observation?code=http://loinc.org|8867-4, not "${expression}"`, at);
  }
  return { type: match[1], params: [...new URLSearchParams(match[2] ?? '')] };
}

function onlyFhirQuery(at: string, language: string | undefined) {
  return errors.invalid(`Only ${FHIR_QUERY} criteria are supported (${at} has language ${language ?? 'none'})`, at);
}

async function count(request: OperationRequest, query: { type: string; params: [string, string][] }, input: EvaluateInput): Promise<number> {
  const params: [string, string][] = query.params.filter(([name]) => !name.startsWith('_') || name === '_id' || name === '_tag');
  const dateParameter = CLINICAL_DATE_PARAMETER[query.type];
  if (dateParameter) params.push([dateParameter, `ge${input.periodStart}`], [dateParameter, `le${input.periodEnd}`]);
  params.push(['_summary', 'count']);
  const result = await search(searchServicesFor(request.ctx, { exactCounts: true }), query.type, params);
  return result.total?.value ?? 0;
}
