/**
 * Preloaded (NODE_OPTIONS=--import) into every node process of a unit-test run (test/run.ts --unit):
 * loading one of the stack gateways of test/sets.ts throws, so a test that needs the local stack
 * fails there instead of starting or reaching it. test/run.ts passes the gateways' file URLs in
 * PUSH_TEST_NO_STACK (a JSON array) and also points every endpoint at a closed port.
 */
import { register } from 'node:module';

const refused = JSON.parse(process.env.PUSH_TEST_NO_STACK || '[]');

const hooks = `
const refused = new Set(${JSON.stringify(refused)});
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  if (refused.has(resolved.url.split('?')[0])) {
    throw new Error(
      'a unit test loaded ' + resolved.url + ' (from ' + context.parentURL + '), a module of the local stack: ' +
        'the test needs the stack, so test/sets.ts must place it with the integration tests (see its comment)',
    );
  }
  return resolved;
}
`;

if (refused.length > 0) register(`data:text/javascript,${encodeURIComponent(hooks)}`);
