import { ID_PATTERN } from '../fhir/ids.js';

/**
 * FHIR R4 primitive types: the JSON type each is written as, and the check of its lexical form
 * (regexes from http://hl7.org/fhir/R4/datatypes.html, plus the calendar checks the regexes cannot
 * express). In the spec's regexes `\s` and `\S` are XML Schema classes, where whitespace means only
 * space, tab, CR and LF; they are spelled out here because JavaScript's `\s` also matches
 * no-break spaces and other Unicode whitespace.
 */

export type JsonKind = 'string' | 'number' | 'boolean';

export interface PrimitiveType {
  readonly code: string;
  readonly json: JsonKind;
  /** What a valid value looks like, for error messages. */
  readonly expected: string;
  /** Returns why the value is invalid, or undefined when it is valid. Called with a value of the right JSON kind. */
  readonly check: (value: never) => string | undefined;
}

const MAX_STRING_LENGTH = 1024 * 1024;
const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;

const YEAR = '([0-9]([0-9]([0-9][1-9]|[1-9]0)|[1-9]00)|[1-9]000)';
const MONTH = '(0[1-9]|1[0-2])';
const DAY = '(0[1-9]|[1-2][0-9]|3[0-1])';
const TIME = '([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)(\\.[0-9]+)?';
const ZONE = '(Z|(\\+|-)((0[0-9]|1[0-3]):[0-5][0-9]|14:00))';

const DATE_RE = new RegExp(`^${YEAR}(-${MONTH}(-${DAY})?)?$`);
const DATE_TIME_RE = new RegExp(`^${YEAR}(-${MONTH}(-${DAY}(T${TIME}${ZONE})?)?)?$`);
const INSTANT_RE = new RegExp(`^${YEAR}-${MONTH}-${DAY}T${TIME}${ZONE}$`);
const TIME_RE = new RegExp(`^${TIME}$`);
const ID_RE = ID_PATTERN;
const CODE_RE = /^[^ \t\r\n]+([ \t\r\n][^ \t\r\n]+)*$/;
const URI_RE = /^[^ \t\r\n]*$/;
const OID_RE = /^urn:oid:[0-2](\.(0|[1-9][0-9]*))+$/;
const UUID_RE = /^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const BASE64_RE = /^[A-Za-z0-9+/]*={0,2}$/;
const HAS_XML_WHITESPACE_RE = /[ \t\r\n]/;
const XML_WHITESPACE_RE = /[ \t\r\n]+/g;

/** With the `u` flag a paired surrogate is one code point, so \p{Cs} matches only lone halves. */
const UNSTORABLE_RE = /[\u0000\p{Cs}]/u;

/**
 * Why a JSON string cannot be stored, if it cannot: PostgreSQL text and jsonb hold neither U+0000
 * nor a UTF-16 surrogate without its pair (it is not a character, and has no UTF-8 form).
 */
export function unstorableTextProblem(value: string): string | undefined {
  if (!UNSTORABLE_RE.test(value)) return undefined;
  return value.includes('\u0000')
    ? 'it contains U+0000 (NUL), which FHIR strings cannot hold'
    : 'it contains a lone UTF-16 surrogate (\\uD800-\\uDFFF without its pair), which is not a character';
}

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeapYear(year) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** The regexes allow day 31 in every month; this rejects 2021-02-29, 2020-04-31 and the like. */
function calendarProblem(value: string): string | undefined {
  if (value.length < 10) return undefined;
  const year = Number(value.slice(0, 4));
  const month = Number(value.slice(5, 7));
  const day = Number(value.slice(8, 10));
  if (day <= daysInMonth(year, month)) return undefined;
  return `${value.slice(0, 7)} has no day ${day}`;
}

function regexCheck(re: RegExp, calendar = false): (value: string) => string | undefined {
  return (value) => {
    if (!re.test(value)) return 'bad format';
    return calendar ? calendarProblem(value) : undefined;
  };
}

function integerCheck(min: number, max: number): (value: number) => string | undefined {
  return (value) => {
    if (!Number.isInteger(value)) return 'not a whole number';
    return value < min || value > max ? 'out of range' : undefined;
  };
}

function checkString(value: string): string | undefined {
  return value.length > MAX_STRING_LENGTH ? 'longer than 1 MB' : undefined;
}

function checkBase64(value: string): string | undefined {
  const compact = HAS_XML_WHITESPACE_RE.test(value) ? value.replace(XML_WHITESPACE_RE, '') : value;
  if (compact.length % 4 !== 0) return 'length is not a multiple of 4';
  return BASE64_RE.test(compact) ? undefined : 'bad format';
}

/** A narrative's div: the XHTML itself is not parsed here, only its outer element. */
function checkXhtml(value: string): string | undefined {
  return value.trimStart().startsWith('<div') ? undefined : 'does not start with <div';
}

function accept(): undefined {
  return undefined;
}

function primitive(
  code: string,
  json: JsonKind,
  expected: string,
  check: (value: never) => string | undefined,
): PrimitiveType {
  return { code, json, expected, check };
}

const URI_EXPECTED = 'a URI without whitespace';
const DATE_EXPECTED = 'YYYY, YYYY-MM or YYYY-MM-DD';

const PRIMITIVES: readonly PrimitiveType[] = [
  primitive('boolean', 'boolean', 'true or false', accept),
  primitive('integer', 'number', 'a whole number from -2147483648 to 2147483647', integerCheck(INT32_MIN, INT32_MAX)),
  primitive('positiveInt', 'number', 'a whole number from 1 to 2147483647', integerCheck(1, INT32_MAX)),
  primitive('unsignedInt', 'number', 'a whole number from 0 to 2147483647', integerCheck(0, INT32_MAX)),
  primitive('decimal', 'number', 'a finite number', (value: number) =>
    Number.isFinite(value) ? undefined : 'not finite',
  ),
  primitive('string', 'string', 'a non-empty string of at most 1 MB', checkString),
  primitive('markdown', 'string', 'non-empty markdown text', accept),
  primitive('code', 'string', 'a code without leading or trailing whitespace or runs of whitespace', regexCheck(CODE_RE)),
  primitive('id', 'string', "1 to 64 characters from A-Z, a-z, 0-9, '-' and '.'", regexCheck(ID_RE)),
  primitive('uri', 'string', URI_EXPECTED, regexCheck(URI_RE)),
  primitive('url', 'string', URI_EXPECTED, regexCheck(URI_RE)),
  primitive('canonical', 'string', URI_EXPECTED, regexCheck(URI_RE)),
  primitive('oid', 'string', 'urn:oid: followed by dot-separated numbers, e.g. urn:oid:1.2.3', regexCheck(OID_RE)),
  primitive('uuid', 'string', 'urn:uuid: followed by a lower-case UUID', regexCheck(UUID_RE)),
  primitive('base64Binary', 'string', 'base64 text (A-Z a-z 0-9 + /, padded with = to a multiple of 4)', checkBase64),
  primitive('date', 'string', DATE_EXPECTED, regexCheck(DATE_RE, true)),
  primitive(
    'dateTime',
    'string',
    `${DATE_EXPECTED} or YYYY-MM-DDThh:mm:ss[.fff] with a time zone (Z or +hh:mm)`,
    regexCheck(DATE_TIME_RE, true),
  ),
  primitive('instant', 'string', 'YYYY-MM-DDThh:mm:ss[.fff] with a time zone (Z or +hh:mm)', regexCheck(INSTANT_RE, true)),
  primitive('time', 'string', 'hh:mm:ss[.fff]', regexCheck(TIME_RE)),
  primitive('xhtml', 'string', 'an XHTML <div> element', checkXhtml),
  // Not an R4 type, but used by a logical model shipped with the definitions: R5 writes it as a string.
  primitive('integer64', 'string', 'a whole number', regexCheck(/^-?([0]|([1-9][0-9]*))$/)),
];

const PRIMITIVES_BY_CODE = new Map(PRIMITIVES.map((type) => [type.code, type]));

export function getPrimitiveType(code: string): PrimitiveType | undefined {
  return PRIMITIVES_BY_CODE.get(code);
}
