import type { YogaLogger } from 'graphql-yoga';
import type { Logger } from 'pino';

/** Yoga's own log lines (request parsing, errors outside execution) through pino. */
export function yogaLogger(log: Logger): YogaLogger {
  const at =
    (level: 'debug' | 'info' | 'warn' | 'error') =>
    (...args: unknown[]): void => {
      const err = args.find((arg): arg is Error => arg instanceof Error);
      const text = args
        .filter((arg) => arg !== err)
        .map((arg) => (typeof arg === 'string' ? arg : JSON.stringify(arg)))
        .join(' ');
      if (err) log[level]({ err }, text || err.message);
      else log[level](text);
    };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}
