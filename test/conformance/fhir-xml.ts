import { getTypeModel, resolveModel, type TypeModel } from '../../src/validation/model.js';

/**
 * FHIR XML → FHIR JSON, for the published examples that exist only as XML (the server speaks JSON).
 * Follows http://hl7.org/fhir/R4/xml.html and json.html: element names are JSON property names,
 * primitives carry `value` (and `id`/extensions, which go to `_name`), `id` and `url` attributes of
 * complex elements become properties, resources sit inside `contained` and similar elements, the
 * narrative `div` is kept as its XHTML source. Lists and JSON types come from the definitions
 * (the validator's compiled model). Enough for well-formed examples; not a general XML parser.
 */
export function fhirXmlToJson(xml: string): Record<string, unknown> {
  return resourceFromXml(parseXml(xml), xml);
}

interface XmlElement {
  readonly name: string;
  readonly attributes: Record<string, string>;
  readonly children: XmlElement[];
  /** Offsets of the element in the source text (the narrative keeps its XHTML as written). */
  readonly start: number;
  end: number;
}

const TOKEN =
  /<!--[\s\S]*?-->|<\?[\s\S]*?\?>|<(\/?)([A-Za-z_][\w.:-]*)((?:\s+[\w.:-]+\s*=\s*(?:"[^"]*"|'[^']*'))*)\s*(\/?)>/g;
const ATTRIBUTE = /([\w.:-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g;

function parseXml(xml: string): XmlElement {
  const stack: XmlElement[] = [];
  let root: XmlElement | undefined;
  for (const match of xml.matchAll(TOKEN)) {
    const [token, closing, name, attributeText, selfClosing] = match;
    if (!name) continue; // comment or processing instruction
    const index = match.index;
    if (closing) {
      const element = stack.pop();
      if (!element || element.name !== name) throw new Error(`Unbalanced XML at ${index}: </${name}>`);
      element.end = index + token.length;
      continue;
    }
    const attributes: Record<string, string> = {};
    for (const [, key, double, single] of (attributeText ?? '').matchAll(ATTRIBUTE)) {
      attributes[key] = decodeEntities(double ?? single ?? '');
    }
    const element: XmlElement = { name, attributes, children: [], start: index, end: index + token.length };
    if (stack.length > 0) stack[stack.length - 1].children.push(element);
    else root ??= element;
    if (!selfClosing) stack.push(element);
  }
  if (!root || stack.length > 0) throw new Error('Incomplete XML document');
  return root;
}

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|lt|gt|amp|quot|apos);/g, (_, entity: string) => {
    if (entity.startsWith('#x')) return String.fromCodePoint(parseInt(entity.slice(2), 16));
    if (entity.startsWith('#')) return String.fromCodePoint(parseInt(entity.slice(1), 10));
    return { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" }[entity] as string;
  });
}

function resourceFromXml(element: XmlElement, source: string): Record<string, unknown> {
  const model = getTypeModel(element.name);
  if (!model?.isResource) throw new Error(`<${element.name}> is not a resource type`);
  return { resourceType: element.name, ...propertiesFromXml(element, model, source) };
}

function propertiesFromXml(element: XmlElement, model: TypeModel, source: string): Record<string, unknown> {
  const json: Record<string, unknown> = {};
  if (element.attributes.id !== undefined) json.id = element.attributes.id;
  if (element.attributes.url !== undefined) json.url = element.attributes.url;
  for (const child of element.children) {
    const slot = model.slots.get(child.name);
    if (!slot) throw new Error(`${model.name} has no element "${child.name}"`);
    const { element: definition, type } = slot;
    if (type.isResource) {
      add(json, child.name, resourceFromXml(child.children[0], source), definition.isArray);
    } else if (type.code === 'xhtml') {
      add(json, child.name, source.slice(child.start, child.end), definition.isArray);
    } else if (type.primitive) {
      const raw = child.attributes.value;
      add(json, child.name, raw === undefined ? null : primitiveValue(raw, type.primitive.json), definition.isArray);
      add(json, `_${child.name}`, primitiveExtras(child, source), definition.isArray);
    } else {
      const childModel = resolveModel(type);
      if (!childModel) throw new Error(`No definition for ${type.code}`);
      add(json, child.name, propertiesFromXml(child, childModel, source), definition.isArray);
    }
  }
  // `_name` only where some value has an id or extensions; `name` only where some value has a value.
  for (const key of Object.keys(json)) {
    const value = json[key];
    if (value === null || (Array.isArray(value) && value.every((item) => item === null))) delete json[key];
  }
  return json;
}

/** A primitive's `id` and extensions, for its `_name` property (null when it has neither). */
function primitiveExtras(element: XmlElement, source: string): Record<string, unknown> | null {
  const extensionModel = getTypeModel('Extension') as TypeModel;
  const extension = element.children.map((child) => propertiesFromXml(child, extensionModel, source));
  const extras: Record<string, unknown> = {};
  if (element.attributes.id !== undefined) extras.id = element.attributes.id;
  if (extension.length > 0) extras.extension = extension;
  return Object.keys(extras).length > 0 ? extras : null;
}

function primitiveValue(raw: string, kind: 'string' | 'number' | 'boolean'): unknown {
  if (kind === 'number') return Number(raw);
  if (kind === 'boolean') return raw === 'true';
  return raw;
}

function add(json: Record<string, unknown>, key: string, value: unknown, isArray: boolean): void {
  if (!isArray) {
    json[key] = value;
    return;
  }
  const list = (json[key] ??= []) as unknown[];
  list.push(value);
}
