/**
 * Naming rules shared by the generator's modules (see the README's GraphQL section): FHIR names are
 * kept where GraphQL allows them, `-` becomes `_`, and generated type names are PascalCase paths.
 */

/** A GraphQL name (spec §2.1.9). Names starting with `__` are reserved for introspection. */
const GRAPHQL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function isGraphQLName(name: string): boolean {
  return GRAPHQL_NAME.test(name) && !name.startsWith('__');
}

export function upperFirst(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** `Bundle.entry.request` → `BundleEntryRequest`: the object type of a backbone element. */
export function backboneTypeName(path: string): string {
  return path.split('.').map(upperFirst).join('');
}

/** `general-practitioner` → `general_practitioner`: search parameter codes and enum values. */
export function hyphenToUnderscore(code: string): string {
  return code.replace(/-/g, '_');
}

/** A value set name such as `AdministrativeGender` or `Address Use` → `AddressUse`. */
export function pascalCase(text: string): string {
  return text
    .split(/[^A-Za-z0-9]+/)
    .filter((part) => part.length > 0)
    .map(upperFirst)
    .join('');
}
