/**
 * The secret values this process has read (passwords, tokens, key passphrases: every `secret` key
 * of common/config-keys.ts, from the environment or its `_FILE`), so that whatever text leaves the
 * process (log lines, pushctl's error messages) can be scrubbed of them wherever they appear, even
 * inside a client library's error message or a URL, not only in fields named like secrets.
 */

/** Shorter values are not scrubbed: they would blank out ordinary words and numbers. */
const MIN_LENGTH = 4;
const REDACTED = '[redacted]';
const known = new Set<string>();

/** Remembers `value` as a secret of this process. */
export function rememberSecret(value: string): void {
  if (value.length < MIN_LENGTH) return;
  known.add(value);
  // As it reads inside a JSON string (a log line) and in a URL.
  known.add(JSON.stringify(value).slice(1, -1));
  known.add(encodeURIComponent(value));
}

/** `text` with every known secret replaced by a marker. */
export function scrubSecrets(text: string): string {
  let out = text;
  for (const secret of known) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  return out;
}
