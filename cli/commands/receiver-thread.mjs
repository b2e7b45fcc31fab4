// The receiver thread's entry (cli/commands/receiver.ts): a worker thread does not inherit the
// main thread's `--import tsx`, so it registers tsx itself before loading the TypeScript.
import { register } from 'tsx/esm/api';

register();
await import('./receiver-thread.ts');
