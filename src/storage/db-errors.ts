import { isLostConnection, sqlStateOf } from '../db/sql-state.js';

/** True for PostgreSQL's unique_violation (23505), however the driver adapter wrapped it. */
export function isUniqueViolation(error: unknown): boolean {
  return sqlStateOf(error) === '23505';
}

/** True for PostgreSQL's invalid_regular_expression (2201B): a pattern that does not compile. */
export function isInvalidRegularExpression(error: unknown): boolean {
  return sqlStateOf(error) === '2201B';
}

/**
 * SQLSTATE classes a later attempt may not meet: connection failures (08), serialization failures
 * and deadlocks (40001, 40P01), too many connections (53300), an administrator's or a crash's
 * shutdown (57P01-57P03); and a connection the driver saw drop.
 */
const TRANSIENT_STATES = /^(08...|40001|40P01|53300|57P0[123])$/;

/** True for a database error that trying again later may not meet (see TRANSIENT_STATES). */
export function isTransientDatabaseError(error: unknown): boolean {
  const state = sqlStateOf(error);
  return state !== undefined ? TRANSIENT_STATES.test(state) : isLostConnection(error);
}
