/**
 * `{ ...base, ...changes }` for objects made per record. In Node 20's V8 an object literal that
 * starts with a spread and then adds or overrides fields gets a hidden class of its own every time:
 * about 1–20 µs and a new map per object, and every later reader of those objects (the stages
 * downstream, the serializers) sees a different shape each time. `Object.assign` onto a fresh
 * object builds the fields in order through shared transitions: objects from bases of one shape
 * share one, at about 0.2 µs (docs/design.md, "Object shapes").
 */
export function withFields<T extends object, U extends object>(base: T, changes: U): Omit<T, keyof U> & U {
  return Object.assign({}, base, changes);
}
