import { renderConfigTable, renderConfigText } from '../../common/config-table.ts';
import { combineConfigErrors, configurationErrors } from '../config-check.ts';

export const configHelp = `pushctl config [--markdown]

  lists every PUSH_* key with its default, allowed values and meaning (common/config-keys.ts);
  keys set in this environment show their value (secrets masked); every invalid one is then
  reported (exit 1).
  --markdown    print the README's configuration tables instead`;

export async function configCommand(args: string[]): Promise<number> {
  if (args.includes('--markdown')) {
    console.log(renderConfigTable());
    return 0;
  }
  console.log(renderConfigText(process.env));
  const errors = configurationErrors(process.env);
  if (errors.length === 0) return 0;
  console.error(`pushctl: ${combineConfigErrors(errors).message}`);
  return 1;
}
