import { renderConfigTable, renderConfigText } from '../../common/config-table.ts';

export const configHelp = `pushctl config [--markdown]

  lists every PUSH_* key with its default, allowed values and meaning (common/config-keys.ts);
  keys set in this environment show their value (secrets masked).
  --markdown    print the README's configuration tables instead`;

export async function configCommand(args: string[]): Promise<number> {
  console.log(args.includes('--markdown') ? renderConfigTable() : renderConfigText(process.env));
  return 0;
}
