/** Types of apply.mjs (plain JS: it runs at npm's postinstall, before tsx exists). */
export const KAFKAJS_FIXES: {
  readonly package: string;
  readonly version: string;
  readonly fixes: ReadonlyArray<{ readonly patch: string; readonly mark: string; readonly published: Readonly<Record<string, string>> }>;
};
export function applyKafkajsPatch(log?: (line: string) => void, packageDir?: string): boolean;
export function applyUnifiedDiff(patch: string, files: ReadonlyMap<string, string>, name?: string, options?: { reverse?: boolean }): Map<string, string>;
