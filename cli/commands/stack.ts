import { stackDown, stackStatus, stackUp } from '../../stack/index.ts';

export const stackHelp = `pushctl stack up|down|status

  up      start what is not running: Kafka (KRaft), Apicurio registry, MariaDB, ClickHouse;
          installs what is missing (Maven Central jars, Debian packages); idempotent
  down    stop only what 'up' started (PID files under .stack/run)
  status  each part with version, port and health`;

export async function stackCommand(args: string[]): Promise<number> {
  switch (args[0]) {
    case 'up':
      await stackUp();
      return 0;
    case 'down':
      await stackDown();
      return 0;
    case 'status': {
      const statuses = await stackStatus();
      for (const s of statuses) {
        console.log(
          `${s.name.padEnd(11)} ${(s.healthy ? 'healthy' : 'DOWN').padEnd(8)} port ${String(s.port).padEnd(6)} ${(s.version ?? '-').padEnd(28)} ${s.pid ? `pid ${s.pid}` : ''} ${s.detail ?? ''}`,
        );
      }
      return statuses.every((s) => s.healthy) ? 0 : 1;
    }
    default:
      console.error(stackHelp);
      return 2;
  }
}
