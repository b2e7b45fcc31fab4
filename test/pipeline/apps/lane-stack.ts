/**
 * The business lane on the real stack (Kafka, registry, MariaDB, the vendor emulators) for tests
 * that start its stages in-process as a worker runs them: a topic prefix of its own with the
 * pipeline's topics and schemas, a task table, and exactly-once StreamsApps closed at the end.
 */
import type { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { type Kafka, type Producer } from 'kafkajs';
import { kafkaClient } from '../../../common/kafka-client.ts';
import { schemaRegistryClient } from '../../../common/registry-client.ts';
import { startEmulators, type StartEmulatorsOptions, type StartedEmulators } from '../../../emulators/index.ts';
import { createLogger } from '../../../common/log.ts';
import { registerSchemas } from '../../../pipeline/schemas.ts';
import { registryValueSerdes, type ValueSerdes } from '../../../pipeline/serdes.ts';
import { topicName, type TopicKey } from '../../../pipeline/topics.ts';
import { createPipelineTopics } from '../../../pipeline/topics-admin.ts';
import { StreamsApp } from '../../../topology/runtime.ts';
import type { Topology } from '../../../topology/builder.ts';
import { stackEndpoints, uniqueName } from '../../support/stack.ts';
import { deleteRunTopics } from '../../support/run-topics.ts';
import { taskTable } from '../../processors/fan-out/support.ts';

export class LaneStack {
  readonly endpoints = stackEndpoints();
  readonly kafka: Kafka;
  readonly registry: SchemaRegistry;
  readonly serdes: ValueSerdes;
  private readonly producer: Producer;
  private readonly apps: StreamsApp[] = [];

  private constructor(
    readonly prefix: string,
    readonly em: StartedEmulators,
    readonly db: Awaited<ReturnType<typeof taskTable>>,
  ) {
    this.kafka = kafkaClient(this.endpoints, { clientId: prefix });
    this.registry = schemaRegistryClient(this.endpoints);
    this.serdes = registryValueSerdes(this.registry, prefix);
    this.producer = this.kafka.producer();
  }

  /** Topics of `partitions` partitions under a fresh prefix named after `name`, schemas registered, emulators started. */
  static async start(name: string, partitions: number, emulators?: StartEmulatorsOptions): Promise<LaneStack> {
    const stack = new LaneStack(`${uniqueName(name)}.`, await startEmulators(emulators), await taskTable());
    await createPipelineTopics({ partitions, prefix: stack.prefix }, stack.endpoints);
    await registerSchemas(stack.registry, { prefix: stack.prefix });
    await stack.producer.connect();
    return stack;
  }

  /** What the stages' builders take: the registry serdes and the prefix. */
  get wiring() {
    return { valueSerdes: this.serdes, topicPrefix: this.prefix };
  }

  /** Produces values Avro-encoded through the registry, 1,000 to a request. */
  async produce(key: TopicKey, records: ReadonlyArray<{ key: string; value: unknown }>): Promise<void> {
    const topic = topicName(key, this.prefix);
    for (let i = 0; i < records.length; i += 1000) {
      const chunk = records.slice(i, i + 1000);
      const messages = await Promise.all(chunk.map(async (r) => ({ key: r.key, value: await this.serdes(key).serialize(topic, r.value) })));
      // Just created: the broker may not know the topic's leaders for a moment.
      for (let attempt = 1; ; attempt++) {
        try {
          await this.producer.send({ topic, messages });
          break;
        } catch (error) {
          if (attempt >= 20) throw error;
          await new Promise((r) => setTimeout(r, 250));
        }
      }
    }
  }

  /** An exactly-once application `<prefix><stage>` running `topology` (not started). */
  app(stage: string, topology: Topology): StreamsApp {
    const a = new StreamsApp({
      applicationId: `${this.prefix}${stage}`,
      topology,
      brokers: this.endpoints.kafkaBrokers,
      processingGuarantee: 'exactly_once',
      commitIntervalMs: 100,
      dlqTopic: topicName('dlq', this.prefix),
      sessionTimeoutMs: 6000,
      logger: createLogger({ stage }, 'warn'),
    });
    this.apps.push(a);
    return a;
  }

  async close(): Promise<void> {
    for (const a of this.apps) await a.close().catch(() => undefined);
    await this.producer.disconnect();
    await this.em.close();
    await this.db.close();
    await deleteRunTopics(this.prefix).catch(() => undefined);
  }
}
