import { cancelCampaign, campaignReport } from '../../entry/start.ts';
import { UsageError } from '../args.ts';

export const campaignsHelp = `pushctl campaigns show <campaign id> | cancel <campaign id> [--sender S]

  show    a campaign's progress: state, distinct uids, expanded, and from ClickHouse the users
          suppressed by reason, the pushes submitted and arrived (docs/entry.md)
  cancel  stops the rest of the campaign (a CANCEL in push.campaigns): nothing more is expanded,
          and requests still on their way are dropped; what was submitted stays submitted.
          --sender names the campaign's business when the expansion has not seen it yet`;

export async function campaignsCommand(args: string[]): Promise<number> {
  const [action, id] = args.filter((a, i) => !a.startsWith('--') && !args[i - 1]?.startsWith('--'));
  if (!id) throw new UsageError(`campaigns ${action ?? 'show'} needs the campaign id`);
  if (action === 'show') {
    const report = await campaignReport(id);
    if (!report) {
      console.error(`no campaign ${id} (a new campaign is known once the expansion took it)`);
      return 1;
    }
    console.log(JSON.stringify(report, null, 2));
    return 0;
  }
  const i = args.indexOf('--sender');
  const before = await cancelCampaign(id, i >= 0 ? args[i + 1] : undefined);
  console.log(`cancel of ${id} acknowledged by Kafka; submitted before it: ${before?.submitted ?? 'unknown'}`);
  return 0;
}
