/** Types of apply.mjs (plain JS: it runs at npm's postinstall, before tsx exists). */
export function applyKafkajsPatch(log?: (line: string) => void, packageDir?: string): boolean;
export function applyUnifiedDiff(patch: string, files: ReadonlyMap<string, string>, name?: string, options?: { reverse?: boolean }): Map<string, string>;
