import type { Resource } from '../../fhir/types.js';
import { isRecord } from '../../fhir/types.js';
import { getTypeModel, resolveModel, type TypeModel } from '../../validation/model.js';

/**
 * Where a transaction rewrites references (http.html 3.1.0.11.2): every `Reference.reference`, at
 * any depth (contained resources, extensions, backbone elements), every element of type uri, url,
 * oid or uuid, and `href`/`src` in the narrative. Canonical elements are left alone. The walk
 * follows the resource's type model, so it knows each element's type.
 */

/** Sees each reference-like string and returns what it becomes (the same string to keep it). */
export type ReferenceVisitor = (value: string, isReference: boolean) => string;

const URI_TYPES = new Set(['uri', 'url', 'oid', 'uuid']);

/** A copy of the resource with every reference-like value passed through `visit`. */
export function mapReferences(resource: Resource, visit: ReferenceVisitor): Resource {
  const model = getTypeModel(resource.resourceType);
  return model ? (walkObject(resource, model, visit) as Resource) : resource;
}

function walkObject(value: Record<string, unknown>, model: TypeModel, visit: ReferenceVisitor): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) out[key] = walkField(key, field, model, visit);
  return out;
}

function walkField(key: string, field: unknown, model: TypeModel, visit: ReferenceVisitor): unknown {
  if (Array.isArray(field)) return field.map((item) => walkField(key, item, model, visit));
  const slot = model.slots.get(key);
  if (!slot || slot.isPrimitiveExtension) return isRecord(field) && slot ? walkExtensionHolder(field, visit) : field;
  if (typeof field === 'string') {
    if (model.name === 'Reference' && key === 'reference') return visit(field, true);
    if (URI_TYPES.has(slot.type.code)) return visit(field, false);
    if (model.name === 'Narrative' && key === 'div') return rewriteNarrative(field, visit);
    return field;
  }
  if (!isRecord(field)) return field;
  if (slot.type.isResource) {
    const own = typeof field.resourceType === 'string' ? getTypeModel(field.resourceType) : undefined;
    return own ? walkObject(field, own, visit) : field;
  }
  const child = resolveModel(slot.type);
  return child ? walkObject(field, child, visit) : field;
}

/** The `_name` sibling of a primitive: its extensions can hold references too. */
function walkExtensionHolder(field: Record<string, unknown>, visit: ReferenceVisitor): Record<string, unknown> {
  const element = getTypeModel('Element');
  return element ? walkObject(field, element, visit) : field;
}

/** `href="..."` and `src="..."` of the XHTML narrative. */
function rewriteNarrative(div: string, visit: ReferenceVisitor): string {
  return div.replace(/\b(href|src)=("([^"]*)"|'([^']*)')/g, (whole, attribute: string, _quoted, double?: string, single?: string) => {
    const value = double ?? single ?? '';
    const replaced = visit(value, false);
    return replaced === value ? whole : `${attribute}="${replaced}"`;
  });
}
