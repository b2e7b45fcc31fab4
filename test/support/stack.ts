import { randomBytes } from 'node:crypto';
import { readEndpoints, type Endpoints } from '../../common/endpoints.ts';

/**
 * What integration tests need to reach the local stack. `npm test` brings the stack up before any
 * test file runs; a test file run on its own expects `npm run pushctl -- stack up` first.
 */
export function stackEndpoints(): Endpoints {
  return readEndpoints(process.env);
}

/** A name no other test (or earlier run) uses: for topics, groups, databases, application ids. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
}
