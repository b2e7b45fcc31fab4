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
 * Wires source nodes, processors, stores and sink nodes by name. Parents must be added before their
 * children; every name is kebab-case and unique.
 *
 * @example
 * new TopologyBuilder()
 *   .addSource('persisted-source', { topics: ['im.message.persisted'], keySerde, valueSerde })
 *   .addProcessor('merge', withStores(() => new MergeProcessor(config), [keyValueStore('merge-windows')]), 'persisted-source')
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

  /**
   * Adds a processor below its parents, and registers and connects the stores its supplier
   * declares (`supplier.stores`, in their order). A store already registered under the same name
   * (declared by another supplier, or added with `addStateStore`) is shared if its definition is
   * the same, and is a ConfigError if it differs.
   */
  addProcessor<KIn, VIn, KOut, VOut>(name: string, supplier: ProcessorSupplier<KIn, VIn, KOut, VOut>, ...parentNames: string[]): this {
    this.checkNewName(name);
    this.checkParents(name, parentNames);
    const declared = supplier.stores ?? [];
    for (const definition of declared) this.registerStore(definition, `processor ${name}`);
    this.nodes.set(name, { kind: 'processor', name, supplier: supplier as ProcessorSupplier, parents: [...parentNames], children: [], stores: [] });
    this.link(name, parentNames);
    this.connectProcessorAndStateStores(
      declared.map((d) => d.name),
      name,
    );
    return this;
  }

  /**
   * Registers a store and attaches it to the named processors (which may share it). For stores no
   * supplier declares (see `ProcessorSupplier.stores`); registering a store again with the same
   * definition only connects it, with a different one is a ConfigError.
   */
  addStateStore(definition: StoreDefinition, ...processorNames: string[]): this {
    this.registerStore(definition, 'addStateStore');
    this.connectProcessorAndStateStores(definition.name, ...processorNames);
    return this;
  }

  /** Gives more processors access to already registered stores (one store name, or a list). */
  connectProcessorAndStateStores(storeNames: string | readonly string[], ...processorNames: string[]): this {
    for (const storeName of typeof storeNames === 'string' ? [storeNames] : storeNames) {
      if (!this.stores.has(storeName)) throw new ConfigError(`store ${storeName}`, 'no such store');
      for (const p of processorNames) {
        const node = this.nodes.get(p);
        if (node?.kind !== 'processor') throw new ConfigError(`store ${storeName}`, `no processor named ${p}`);
        if (!node.stores.includes(storeName)) node.stores.push(storeName);
      }
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

  /** Registers `definition`, or checks it against the store already registered under its name. */
  private registerStore(definition: StoreDefinition, declaredBy: string): void {
    const name = definition.name;
    if (!NAME.test(name)) throw new ConfigError(`store ${name}`, 'store names must be kebab-case (they name changelog topics)');
    const existing = this.stores.get(name);
    if (!existing) {
      this.stores.set(name, definition);
      return;
    }
    const difference = storeDifference(existing, definition);
    if (difference) {
      throw new ConfigError(
        `store ${name}`,
        `${declaredBy} declares it with another ${difference} than the store already registered under this name (processors that share a store must declare one definition: pass the same StoreDefinition, or the same serde)`,
      );
    }
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

/**
 * What tells two definitions of one store name apart (kind, changelog backing, serde instance), or
 * undefined when they are the same store. Serdes compare by identity: a serde is code.
 */
function storeDifference(a: StoreDefinition, b: StoreDefinition): string | undefined {
  if (a === b) return undefined;
  if (a.kind !== b.kind) return `kind (${b.kind}, registered: ${a.kind})`;
  const changelogged = (d: StoreDefinition) => d.kind !== 'schedule' && d.changelog !== false;
  if (changelogged(a) !== changelogged(b)) return `changelog backing (${changelogged(b)}, registered: ${changelogged(a)})`;
  if (a.serde !== b.serde) return 'serde';
  return undefined;
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
