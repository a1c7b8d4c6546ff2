const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/**
 * An instant as an HTTP date (RFC 9110 5.6.7, `Fri, 27 Nov 2026 17:20:01 GMT`), as
 * `new Date(instant).toUTCString()` writes it. The form every stored version has
 * (`2026-11-27T17:20:01.123Z`) is rewritten from its parts: parsing it into a Date to format it
 * again was a share of each read's CPU. Any other form goes through Date.
 */
export function httpDate(instant: string): string {
  if (!INSTANT.test(instant)) return new Date(instant).toUTCString();
  const year = digits(instant, 0, 4);
  const month = digits(instant, 5, 7);
  const day = digits(instant, 8, 10);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month) || digits(instant, 11, 13) > 23 || digits(instant, 14, 16) > 59 || digits(instant, 17, 19) > 59) {
    return new Date(instant).toUTCString();
  }
  return `${WEEKDAYS[weekday(year, month, day)]}, ${instant.slice(8, 10)} ${MONTHS[month - 1]} ${instant.slice(0, 4)} ${instant.slice(11, 19)} GMT`;
}

/** The stored form: `YYYY-MM-DDTHH:MM:SS.sssZ`. */
const INSTANT = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** The decimal number of `text`'s digits from `start` to `end` (the caller checked they are digits). */
function digits(text: string, start: number, end: number): number {
  let value = 0;
  for (let i = start; i < end; i++) value = value * 10 + text.charCodeAt(i) - 48;
  return value;
}

function daysInMonth(year: number, month: number): number {
  if (month !== 2) return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
  return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
}

/** Day of the week (0 = Sunday) of a Gregorian date: days since 1970-01-01, a Thursday (H. Hinnant's days_from_civil). */
function weekday(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  const days = era * 146097 + dayOfEra - 719468;
  return (((days + 4) % 7) + 7) % 7;
}
