import { AggregatorRegistry, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { LatencyHistogram } from '../../src/http/metrics/latency-histogram.js';

// The request histogram is Flint's own (src/http/metrics/latency-histogram.ts); a scrape must read
// exactly as prom-client's Histogram wrote it, as text and as the JSON workers send the primary.

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01];
const OBSERVED: [Record<string, string>, number][] = [
  [{ method: 'GET', route: '/fhir/R4/:type/:id', status: '200' }, 0.0004],
  [{ method: 'GET', route: '/fhir/R4/:type/:id', status: '200' }, 0.003],
  [{ method: 'GET', route: '/fhir/R4/:type/:id', status: '404' }, 0.02],
  [{ method: 'POST', route: 'unmatched', status: '404' }, 0.001],
];

function bothRegistries(): [Registry, Registry] {
  const theirs = new Registry();
  const histogram = new Histogram({ name: 'h_seconds', help: 'help "text"', labelNames: ['method', 'route', 'status'], buckets: BUCKETS, registers: [theirs] });
  const ours = new Registry();
  const latency = new LatencyHistogram('h_seconds', 'help "text"', BUCKETS, ours);
  const series = new Map<string, ReturnType<LatencyHistogram['series']>>();
  for (const [labels, value] of OBSERVED) {
    histogram.labels(labels.method, labels.route, labels.status).observe(value);
    const key = JSON.stringify(labels);
    if (!series.has(key)) series.set(key, latency.series(labels));
    series.get(key)!.observe(value);
  }
  return [theirs, ours];
}

describe('the request latency histogram', () => {
  it('is scraped as prom-client’s Histogram text', async () => {
    const [theirs, ours] = bothRegistries();
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });

  it('adds up across workers as prom-client’s Histogram does', async () => {
    const [theirs, ours] = bothRegistries();
    const [theirsAgain, oursAgain] = bothRegistries();
    const summed = async (a: Registry, b: Registry) => AggregatorRegistry.aggregate([await a.getMetricsAsJSON(), await b.getMetricsAsJSON()]).metrics();
    expect(await summed(ours, oursAgain)).toBe(await summed(theirs, theirsAgain));
  });
});
