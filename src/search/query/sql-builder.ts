/** Escapes `%`, `_` and `\` for a LIKE pattern (the default escape character is `\`). */
export function likeEscape(text: string): string {
  return text.replace(/[\\%_]/g, (char) => `\\${char}`);
}

