/** Names joined as a reader writes them: "a", "a or b", "a, b and c". */
export function joinWords(names: readonly string[], conjunction: 'and' | 'or'): string {
  return names.length < 2 ? names.join('') : `${names.slice(0, -1).join(', ')} ${conjunction} ${names[names.length - 1]}`;
}
