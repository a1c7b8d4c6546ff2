/**
 * `displayLanguage` ($lookup, $validate-code, $expand; FHIR R4): the display of a concept in the
 * requested language is a designation in that language where the code system has one, and the
 * concept's own display otherwise.
 */
export interface LanguageDesignation {
  language: string | null;
  useCode?: string | null;
  value: string;
}

/**
 * The display of a concept in `language` (a BCP-47 tag): a designation with exactly that tag
 * first, then one of the same primary language (`de` for `de-CH`, and the reverse); among those,
 * one without a `use` or used as a display before other uses (synonyms, fully specified names).
 * Undefined when there is none: the caller keeps the concept's display.
 */
export function designationIn(language: string | undefined, designations: readonly LanguageDesignation[]): string | undefined {
  if (!language || designations.length === 0) return undefined;
  const wanted = language.toLowerCase();
  const primary = wanted.split('-')[0];
  let best: { value: string; rank: number } | undefined;
  for (const designation of designations) {
    const tag = designation.language?.toLowerCase();
    if (!tag) continue;
    const languageRank = tag === wanted ? 0 : tag.split('-')[0] === primary ? 2 : undefined;
    if (languageRank === undefined) continue;
    const rank = languageRank + (!designation.useCode || designation.useCode === 'display' ? 0 : 1);
    if (!best || rank < best.rank) best = { value: designation.value, rank };
  }
  return best?.value;
}
