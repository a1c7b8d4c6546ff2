import { expect } from 'vitest';
import type { TestResponse } from '../helpers/server.js';

type Json = any;

export const ref = (reference: string) => ({ reference });

/** `Type/id` of each entry of a `$graph` answer, in order (the answer must be 200). */
export function keys(res: TestResponse<Json>): string[] {
  expect(res.status, res.text).toBe(200);
  return (res.body.entry ?? []).map((e: Json) => `${e.resource.resourceType}/${e.resource.id}`);
}
