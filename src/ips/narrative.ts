import { isRecord, type Resource } from '../fhir/types.js';

/**
 * The section narrative IPS requires (`Composition.section.text`, status `generated`): a plain
 * XHTML table, one row per entry, built from the few elements a reader scans first. Every cell is
 * escaped text; nothing of the resources is copied as markup.
 */

export type Cell = string | undefined;

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ESCAPES[char]);
}

/** `<div xmlns=...>` holding a table of `rows` under `headings`, or `text` when there are no rows. */
export function narrativeDiv(headings: readonly string[], rows: readonly Cell[][], text?: string): string {
  const body =
    rows.length === 0
      ? `<p>${escapeHtml(text ?? 'No information')}</p>`
      : `<table><thead><tr>${headings.map((h) => `<th>${escapeHtml(h)}</th>`).join('')}</tr></thead><tbody>${rows
          .map((row) => `<tr>${row.map((cell) => `<td>${escapeHtml(cell ?? '')}</td>`).join('')}</tr>`)
          .join('')}</tbody></table>`;
  return `<div xmlns="http://www.w3.org/1999/xhtml">${body}</div>`;
}

/** A CodeableConcept (or Coding) as a reader would name it: its text, else a coding's display, else its code. */
export function conceptText(value: unknown): Cell {
  if (!isRecord(value)) return undefined;
  if (typeof value.text === 'string') return value.text;
  if (typeof value.display === 'string') return value.display;
  if (typeof value.code === 'string') return value.code;
  const codings = Array.isArray(value.coding) ? value.coding.filter(isRecord) : [];
  for (const coding of codings) if (typeof coding.display === 'string') return coding.display;
  for (const coding of codings) if (typeof coding.code === 'string') return coding.code;
  return undefined;
}

/** The first of a list of CodeableConcepts, named. */
export function firstConceptText(value: unknown): Cell {
  return Array.isArray(value) ? conceptText(value[0]) : conceptText(value);
}

/** The first string found under `keys` (a `[x]` element's choices: `onsetDateTime`, `onsetPeriod.start`...). */
export function firstDate(resource: Resource, keys: readonly string[]): Cell {
  for (const key of keys) {
    const value = resource[key];
    if (typeof value === 'string') return value;
    if (isRecord(value) && typeof value.start === 'string') return value.start;
  }
  return undefined;
}

/** An Observation's value[x] as text: a quantity with its unit, a concept by name, a primitive as is. */
export function observationValue(resource: Resource): Cell {
  const quantity = resource.valueQuantity;
  if (isRecord(quantity) && quantity.value !== undefined) return `${String(quantity.value)}${quantity.unit ? ` ${String(quantity.unit)}` : ''}`;
  if (resource.valueCodeableConcept !== undefined) return conceptText(resource.valueCodeableConcept);
  for (const key of ['valueString', 'valueBoolean', 'valueInteger', 'valueDateTime', 'valueTime']) {
    if (resource[key] !== undefined) return String(resource[key]);
  }
  const components = Array.isArray(resource.component) ? resource.component.filter(isRecord) : [];
  const parts = components.map((component) => [conceptText(component.code), observationValue(component as Resource)].filter(Boolean).join(': '));
  return parts.length > 0 ? parts.join('; ') : undefined;
}
