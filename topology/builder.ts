import { ConfigError } from '../common/errors.ts';
import type { ProcessorSupplier } from './api.ts';
import type { StoreDefinition } from './stores.ts';
import type { Serde } from './serdes.ts';

/** Node and store names: kebab-case, because store names become changelog topic names. */
const NAME = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

export interface SourceOptions<K, V> {
  /** Topics read by this source; all sources of one sub-topology must be co-partitioned. */
  topics: readonly string[];
  keySerde: Serde<K>;
  valueSerde: Serde<V>;
}

export interface SinkOptions<K, V> {
  topic: string;
  keySerde: Serde<K>;
  valueSerde: Serde<V>;
}

export interface SourceNode {
  readonly kind: 'source';
  readonly name: string;
  readonly topics: readonly string[];
  readonly keySerde: Serde<unknown>;
  readonly valueSerde: Serde<unknown>;
  readonly children: string[];
}

export interface ProcessorNode {
  readonly kind: 'processor';
  readonly name: string;
  readonly supplier: ProcessorSupplier;
  readonly parents: readonly string[];
  readonly children: string[];
  readonly stores: string[];
}

export interface SinkNode {
  readonly kind: 'sink';
  readonly name: string;
  readonly topic: string;
  readonly keySerde: Serde<unknown>;
  readonly valueSerde: Serde<unknown>;
  readonly parents: readonly string[];
}

export type TopologyNode = SourceNode | ProcessorNode | SinkNode;

/** A connected part of the graph: the unit that becomes one task per input partition. */
export interface SubTopology {
  readonly id: number;
  /** Nodes in insertion (and so topological) order. */
  readonly nodes: readonly TopologyNode[];
  readonly sourceTopics: readonly string[];
  readonly sinkTopics: readonly string[];
  readonly stores: readonly StoreDefinition[];
}

/**
 * An immutable, validated processing graph. Built by `TopologyBuilder.build()`; run by the
 * `TopologyTestDriver` (in process) or by `StreamsApp` (on Kafka).
 */
export class Topology {
  readonly nodes: ReadonlyMap<string, TopologyNode>;
  readonly stores: ReadonlyMap<string, StoreDefinition>;
  readonly subtopologies: readonly SubTopology[];

  constructor(nodes: Map<string, TopologyNode>, stores: Map<string, StoreDefinition>) {
    this.nodes = nodes;
    this.stores = stores;
    this.subtopologies = computeSubtopologies(nodes, stores);
  }

  /** The sub-topology that reads `topic`, if any. */
  subtopologyOfTopic(topic: string): SubTopology | undefined {
    return this.subtopologies.find((s) => s.sourceTopics.includes(topic));
  }

  subtopologyOfStore(store: string): SubTopology | undefined {
    return this.subtopologies.find((s) => s.stores.some((d) => d.name === store));
  }

  /** Every source topic of the application. */
  get sourceTopics(): string[] {
    return this.subtopologies.flatMap((s) => [...s.sourceTopics]);
  }

  /** A stable, human-readable description of the graph (Kafka Streams' `describe()` layout). */
  describe(): string {
    const lines = ['Topologies:'];
    for (const sub of this.subtopologies) {
      lines.push(`  Sub-topology: ${sub.id}`);
      for (const node of sub.nodes) {
        if (node.kind === 'source') lines.push(`    Source: ${node.name} (topics: [${node.topics.join(', ')}])`);
        else if (node.kind === 'processor') lines.push(`    Processor: ${node.name} (stores: [${node.stores.join(', ')}])`);
        else lines.push(`    Sink: ${node.name} (topic: ${node.topic})`);
        if (node.kind !== 'sink' && node.children.length > 0) lines.push(`      --> ${node.children.join(', ')}`);
        if (node.kind !== 'source') lines.push(`      <-- ${node.parents.join(', ')}`);
      }
    }
    return lines.join('\n') + '\n';
  }
}

/**
 * Wires sources, processors, stores and sinks by name. Parents must be added before their
 * children; every name is kebab-case and unique.
 *
 * @example
 * new TopologyBuilder()
 *   .addSource('persisted-source', { topics: ['im.message.persisted'], keySerde, valueSerde })
 *   .addProcessor('merge', () => new MergeProcessor(config), 'persisted-source')
 *   .addStateStore(keyValueStore('merge-windows'), 'merge')
 *   .addSink('merged-sink', { topic: 'push.merged', keySerde, valueSerde }, 'merge')
 *   .build();
 */
export class TopologyBuilder {
  private readonly nodes = new Map<string, TopologyNode>();
  private readonly stores = new Map<string, StoreDefinition>();
  private readonly topicsRead = new Set<string>();

  addSource<K, V>(name: string, options: SourceOptions<K, V>): this {
    this.checkNewName(name);
    if (options.topics.length === 0) throw new ConfigError(`source ${name}`, 'needs at least one topic');
    for (const topic of options.topics) {
      if (this.topicsRead.has(topic)) throw new ConfigError(`source ${name}`, `topic ${topic} is already read by another source`);
      this.topicsRead.add(topic);
    }
    this.nodes.set(name, {
      kind: 'source',
      name,
      topics: [...options.topics],
      keySerde: options.keySerde as Serde<unknown>,
      valueSerde: options.valueSerde as Serde<unknown>,
      children: [],
    });
    return this;
  }

  addProcessor<KIn, VIn, KOut, VOut>(name: string, supplier: ProcessorSupplier<KIn, VIn, KOut, VOut>, ...parentNames: string[]): this {
    this.checkNewName(name);
    this.checkParents(name, parentNames);
    this.nodes.set(name, { kind: 'processor', name, supplier: supplier as ProcessorSupplier, parents: [...parentNames], children: [], stores: [] });
    this.link(name, parentNames);
    return this;
  }

  /** Registers a store and attaches it to the named processors (which may share it). */
  addStateStore(definition: StoreDefinition, ...processorNames: string[]): this {
    if (!NAME.test(definition.name)) throw new ConfigError(`store ${definition.name}`, 'store names must be kebab-case (they name changelog topics)');
    if (this.stores.has(definition.name)) throw new ConfigError(`store ${definition.name}`, 'a store with this name already exists');
    this.stores.set(definition.name, definition);
    this.connectProcessorAndStateStores(definition.name, ...processorNames);
    return this;
  }

  /** Gives more processors access to an already registered store. */
  connectProcessorAndStateStores(storeName: string, ...processorNames: string[]): this {
    if (!this.stores.has(storeName)) throw new ConfigError(`store ${storeName}`, 'no such store');
    for (const p of processorNames) {
      const node = this.nodes.get(p);
      if (node?.kind !== 'processor') throw new ConfigError(`store ${storeName}`, `no processor named ${p}`);
      if (!node.stores.includes(storeName)) node.stores.push(storeName);
    }
    return this;
  }

  addSink<K, V>(name: string, options: SinkOptions<K, V>, ...parentNames: string[]): this {
    this.checkNewName(name);
    this.checkParents(name, parentNames);
    this.nodes.set(name, {
      kind: 'sink',
      name,
      topic: options.topic,
      keySerde: options.keySerde as Serde<unknown>,
      valueSerde: options.valueSerde as Serde<unknown>,
      parents: [...parentNames],
    });
    this.link(name, parentNames);
    return this;
  }

  build(): Topology {
    for (const node of this.nodes.values()) {
      if (node.kind === 'source' && node.children.length === 0) throw new ConfigError(`source ${node.name}`, 'has no children');
    }
    for (const store of this.stores.values()) {
      if (![...this.nodes.values()].some((n) => n.kind === 'processor' && n.stores.includes(store.name))) {
        throw new ConfigError(`store ${store.name}`, 'is not attached to any processor');
      }
    }
    return new Topology(new Map(this.nodes), new Map(this.stores));
  }

  private checkNewName(name: string): void {
    if (!NAME.test(name)) throw new ConfigError(`node ${name}`, 'node names must be kebab-case');
    if (this.nodes.has(name)) throw new ConfigError(`node ${name}`, 'a node with this name already exists');
  }

  private checkParents(name: string, parents: string[]): void {
    if (parents.length === 0) throw new ConfigError(`node ${name}`, 'needs at least one parent');
    for (const p of parents) {
      const parent = this.nodes.get(p);
      if (!parent) throw new ConfigError(`node ${name}`, `parent ${p} does not exist (add parents first)`);
      if (parent.kind === 'sink') throw new ConfigError(`node ${name}`, `parent ${p} is a sink`);
    }
  }

  private link(child: string, parents: string[]): void {
    for (const p of parents) (this.nodes.get(p) as SourceNode | ProcessorNode).children.push(child);
  }
}

/** Connected components over parent edges and shared stores, numbered by first appearance. */
function computeSubtopologies(nodes: Map<string, TopologyNode>, stores: Map<string, StoreDefinition>): SubTopology[] {
  const root = new Map<string, string>();
  const find = (x: string): string => {
    let r = x;
    while (root.get(r) !== r) r = root.get(r)!;
    root.set(x, r);
    return r;
  };
  const union = (a: string, b: string) => root.set(find(a), find(b));
  for (const name of nodes.keys()) root.set(name, name);
  for (const name of stores.keys()) root.set(`store:${name}`, `store:${name}`);
  for (const node of nodes.values()) {
    if (node.kind !== 'source') for (const p of node.parents) union(node.name, p);
    if (node.kind === 'processor') for (const s of node.stores) union(node.name, `store:${s}`);
  }
  const groups = new Map<string, TopologyNode[]>();
  for (const node of nodes.values()) {
    const r = find(node.name);
    if (!groups.has(r)) groups.set(r, []);
    groups.get(r)!.push(node);
  }
  return [...groups.values()].map((members, id) => {
    const storeNames = new Set(members.flatMap((n) => (n.kind === 'processor' ? n.stores : [])));
    return {
      id,
      nodes: members,
      sourceTopics: members.flatMap((n) => (n.kind === 'source' ? [...n.topics] : [])),
      sinkTopics: [...new Set(members.flatMap((n) => (n.kind === 'sink' ? [n.topic] : [])))],
      stores: [...storeNames].map((s) => stores.get(s)!),
    };
  });
}
