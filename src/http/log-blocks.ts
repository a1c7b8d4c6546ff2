/** Where blocks of lines go: pino's destination (sonic-boom), which does the writing and its retries. */
export interface LineSink {
  write(text: string): unknown;
  flush(callback?: (error?: Error) => void): void;
  flushSync(): void;
}

/**
 * The log's lines gathered into blocks of `blockChars` before they reach the destination, which
 * then writes each block as one: sonic-boom measures the UTF-8 length of its whole pending buffer
 * at every write, which made each line cost more the fuller the buffer was (about 2 µs a request
 * line against a tenth of that here). Lines wait at most `flushMs`, and are handed over when the
 * process exits (before the destination's own last flush, or followed by one).
 */
export class LogBlocks {
  private lines: string[] = [];
  private chars = 0;

  constructor(
    private readonly sink: LineSink,
    private readonly blockChars: number,
    flushMs: number,
  ) {
    setInterval(() => this.handOver(), flushMs).unref();
    process.once('exit', () => this.flushSync());
  }

  write(line: string): boolean {
    this.lines.push(line);
    this.chars += line.length;
    if (this.chars >= this.blockChars) this.handOver();
    return true;
  }

  flush(callback?: (error?: Error) => void): void {
    this.handOver();
    this.sink.flush(callback);
  }

  flushSync(): void {
    if (this.lines.length === 0) return;
    this.handOver();
    try {
      this.sink.flushSync();
    } catch {
      // The destination is gone or still opening: nothing more can be written.
    }
  }

  private handOver(): void {
    if (this.lines.length === 0) return;
    const block = this.lines.length === 1 ? this.lines[0] : this.lines.join('');
    this.lines = [];
    this.chars = 0;
    this.sink.write(block);
  }
}
