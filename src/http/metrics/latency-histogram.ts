import type { Registry } from 'prom-client';

/** The labels of one series, in the order they are declared. */
export type SeriesLabels = Readonly<Record<string, string>>;

/** One series: counts per bucket (not cumulative), their sum and their count. */
export class LatencySeries {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    readonly labels: SeriesLabels,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length);
  }

  /** One observation of `seconds`. */
  observe(seconds: number): void {
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (seconds <= bounds[i]) {
        this.counts[i]++;
        break;
      }
    }
    this.sum += seconds;
    this.count++;
  }
}

interface ValuePair {
  labels: Record<string, string | number>;
  sharedLabels?: SeriesLabels;
  value: number;
  metricName: string;
  exemplar?: null;
}

/**
 * A Prometheus histogram that prom-client's Registry exposes (text and JSON, so the primary can add
 * up its workers' series) exactly as it exposes its own Histogram, with an observation that costs a
 * few additions: prom-client's checks each observation's labels and hashes them into a key, which
 * showed in profiles of reads by id (the request histogram observes every request). A caller keeps
 * the series of each label set (`series`) and observes on it.
 */
export class LatencyHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly all: LatencySeries[] = [];

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly bounds: readonly number[],
    registry: Registry,
  ) {
    (registry as unknown as { registerMetric(metric: unknown): void }).registerMetric(this);
  }

  /** A new series of these labels (the caller keeps it: asking twice makes two). */
  series(labels: SeriesLabels): LatencySeries {
    const made = new LatencySeries(labels, this.bounds);
    this.all.push(made);
    return made;
  }

  /** Forgets every observation: a series appears again when it is next observed, as in prom-client. */
  reset(): void {
    for (const series of this.all) {
      series.counts.fill(0);
      series.sum = 0;
      series.count = 0;
    }
  }

  /** What the Registry writes as text: bucket labels apart from the series' own. */
  getForPromString(): { name: string; help: string; type: string; values: ValuePair[]; aggregator: string } {
    return { name: this.name, help: this.help, type: this.type, values: this.values(), aggregator: this.aggregator };
  }

  /** The JSON form (workers' metrics): each value with all its labels, `le` first. */
  get(): { name: string; help: string; type: string; values: ValuePair[]; aggregator: string } {
    const values = this.values().map(({ labels, sharedLabels, ...rest }) => ({ ...rest, labels: { ...labels, ...sharedLabels } }));
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  private values(): ValuePair[] {
    const values: ValuePair[] = [];
    const bucket = `${this.name}_bucket`;
    for (const series of this.all) {
      if (series.count === 0) continue;
      let cumulative = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        cumulative += series.counts[i];
        values.push({ labels: { le: this.bounds[i] }, sharedLabels: series.labels, value: cumulative, metricName: bucket, exemplar: null });
      }
      values.push({ labels: { le: '+Inf' }, sharedLabels: series.labels, value: series.count, metricName: bucket, exemplar: null });
      values.push({ labels: {}, sharedLabels: series.labels, value: series.sum, metricName: `${this.name}_sum` });
      values.push({ labels: {}, sharedLabels: series.labels, value: series.count, metricName: `${this.name}_count` });
    }
    return values;
  }
}
