/**
 * Composite store and timer keys: JSON arrays of their parts, so any id (even one holding a
 * separator character) round-trips exactly and a timer key can be split back into its parts.
 */
export function compositeKey(...parts: string[]): string {
  return JSON.stringify(parts);
}

/** The parts of a key made by compositeKey. */
export function keyParts(key: string): string[] {
  return JSON.parse(key) as string[];
}
