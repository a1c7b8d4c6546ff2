/** The FHIR id datatype (R4 datatypes.html#id): 1-64 of letters, digits, `-` and `.`. */
export const ID_SOURCE = '[A-Za-z0-9\\-.]{1,64}';

/** A whole string that is a FHIR id. */
export const ID_PATTERN = new RegExp(`^${ID_SOURCE}$`);

/** A relative reference `Type/id`: the type and the id. */
export const TYPE_AND_ID = new RegExp(`^([A-Z][A-Za-z]+)/(${ID_SOURCE})$`);

export function isFhirId(value: string): boolean {
  return ID_PATTERN.test(value);
}
