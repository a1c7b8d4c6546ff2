/**
 * One result of evaluating a search parameter expression: the JSON value and, when known, its
 * FHIR type (`HumanName`, `dateTime`, `code`, ...). Without a type, rows follow the value's shape.
 */
export interface TypedValue {
  value: unknown;
  type: string | undefined;
}
