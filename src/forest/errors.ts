/** Where a bad value sits: every field is optional because file-level errors have no tree. */
export interface ForestErrorLocation {
  /** Tree position in the forest (0-based). */
  tree?: number;
  /** Tree id as given (or defaulted). */
  treeId?: string;
  /** Node index inside its tree. */
  node?: number;
  /** Field name, e.g. `visits` or `embedding[3]`. */
  field?: string;
  /** 1-based line number in a JSON Lines file. */
  line?: number;
}

/**
 * A malformed forest. Thrown before any scoring starts, so no partial output exists.
 * The message always begins with the location, e.g.
 * `tree "q17" (#3), node 5, field "visits": must be an integer >= 0, got 1.5`.
 */
export class ForestError extends Error {
  readonly location: ForestErrorLocation;
  readonly reason: string;

  constructor(location: ForestErrorLocation, reason: string) {
    super(`${formatLocation(location)}${reason}`);
    this.name = 'ForestError';
    this.location = location;
    this.reason = reason;
  }
}

function formatLocation(loc: ForestErrorLocation): string {
  const parts: string[] = [];
  if (loc.line !== undefined) parts.push(`line ${loc.line}`);
  if (loc.tree !== undefined) {
    parts.push(loc.treeId !== undefined ? `tree ${JSON.stringify(loc.treeId)} (#${loc.tree})` : `tree #${loc.tree}`);
  }
  if (loc.node !== undefined) parts.push(`node ${loc.node}`);
  if (loc.field !== undefined) parts.push(`field ${JSON.stringify(loc.field)}`);
  return parts.length > 0 ? `${parts.join(', ')}: ` : '';
}

/** Renders a value for an error message without dumping huge arrays. */
export function describeValue(value: unknown): string {
  if (typeof value === 'number') return Number.isNaN(value) ? 'NaN' : String(value);
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (Array.isArray(value)) return `an array of length ${value.length}`;
  if (value === null) return 'null';
  return typeof value;
}
