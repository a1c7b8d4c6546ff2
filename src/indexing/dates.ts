/**
 * FHIR date, dateTime and instant values as the range of instants they cover
 * (http://hl7.org/fhir/R4/search.html#date): `2024` is the whole year, `2024-03-05` the whole day,
 * `2024-03-05T10:00:00+02:00` the whole second. Values without a time zone (dates, and dateTimes
 * written without one) are taken as UTC: the server has no better time zone to assume, and a fixed
 * rule keeps search results the same on every host.
 */

export interface DateRange {
  start: string;
  end: string;
}

const DATE_TIME =
  /^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(Z|[+-]\d{2}:\d{2})?)?)?)?$/;

const MS_PER_MINUTE = 60_000;

function utc(year: number, monthIndex: number, day: number, hour = 0, minute = 0, second = 0, ms = 0): number {
  // setUTCFullYear, unlike Date.UTC, does not map years 0-99 to 1900-1999.
  const date = new Date(Date.UTC(2000, 0, 1, hour, minute, second, ms));
  date.setUTCFullYear(year, monthIndex, day);
  return date.getTime();
}

function daysInMonth(year: number, month: number): number {
  return new Date(utc(year, month, 0)).getUTCDate();
}

/** The first and last instants of years 0001-9999, the years FHIR dates have. */
const FIRST_MS = utc(1, 0, 1);
const LAST_MS = utc(10000, 0, 1) - 1;

/**
 * ISO instant, held within years 0001-9999. A time zone can carry a valid FHIR dateTime out of
 * them (`0001-01-01T00:00:00+14:00` is 0000-12-31 in UTC): PostgreSQL refuses year 0000 ("date/time
 * field value out of range") and ISO strings write year 10000 as `+010000`, which it cannot read.
 * Held at the edge, such a value is off by at most the offset, in years no record dates from.
 */
function iso(ms: number): string | undefined {
  if (!Number.isFinite(ms)) return undefined;
  return new Date(Math.min(Math.max(ms, FIRST_MS), LAST_MS)).toISOString();
}

function offsetMinutes(zone: string | undefined): number {
  if (!zone || zone === 'Z') return 0;
  const sign = zone.startsWith('-') ? -1 : 1;
  return sign * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(4, 6)));
}

/** Milliseconds from the first to the last instant covered by a time written to this precision. */
function timeSpan(seconds: string | undefined, fraction: string | undefined): number {
  if (seconds === undefined) return MS_PER_MINUTE - 1;
  if (fraction === undefined) return 999;
  return fraction.length >= 3 ? 0 : 10 ** (3 - fraction.length) - 1;
}

/** The range covered by a date, dateTime or instant, or undefined when the text is not one. */
export function dateRange(text: string): DateRange | undefined {
  const match = DATE_TIME.exec(text);
  if (!match) return undefined;
  const [, y, mo, d, h, mi, s, fraction, zone] = match;
  const year = Number(y);
  // FHIR's date pattern has no year 0000 (nor has PostgreSQL: 1 BC comes before 1 AD).
  if (year === 0) return undefined;
  const month = mo === undefined ? 1 : Number(mo);
  const day = d === undefined ? 1 : Number(d);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  let start: number;
  let end: number;
  if (h === undefined) {
    start = utc(year, month - 1, day);
    if (mo === undefined) end = utc(year + 1, 0, 1) - 1;
    else if (d === undefined) end = utc(year, month, 1) - 1;
    else end = utc(year, month - 1, day + 1) - 1;
  } else {
    const hour = Number(h);
    const minute = Number(mi);
    const second = s === undefined ? 0 : Number(s);
    if (hour > 23 || minute > 59 || second > 60) return undefined;
    const ms = fraction === undefined ? 0 : Number(fraction.slice(0, 3).padEnd(3, '0'));
    start = utc(year, month - 1, day, hour, minute, second, ms) - offsetMinutes(zone) * MS_PER_MINUTE;
    end = start + timeSpan(s, fraction);
  }
  const startText = iso(start);
  const endText = iso(end);
  return startText && endText ? { start: startText, end: endText } : undefined;
}
