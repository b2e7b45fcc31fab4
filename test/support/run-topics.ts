/**
 * Cleanup of the topics a test's pipeline run created (demo/environment.ts gives every run its own
 * topic prefix): stack tests remove what they create.
 */
import { chaosAdmin } from '../../chaos/drain.ts';

/** Deletes every topic whose name starts with `prefix`. */
export async function deleteRunTopics(prefix: string): Promise<void> {
  const admin = chaosAdmin();
  await admin.connect();
  try {
    const topics = (await admin.listTopics()).filter((name) => name.startsWith(prefix));
    if (topics.length > 0) await admin.deleteTopics({ topics });
  } finally {
    await admin.disconnect();
  }
}
