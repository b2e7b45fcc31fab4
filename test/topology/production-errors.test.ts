import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyTestDriver } from '../../topology/test-driver.ts';
import type { KeyValueStore } from '../../topology/stores.ts';
import { avroSerde } from '../../topology/serdes.ts';
import { DLQ_HEADERS, fitDeadLetter, renderForDeadLetter } from '../../topology/dlq.ts';
import { DEFAULT_MAX_RECORD_BYTES, oversizeBytes, recordBytes } from '../../topology/record-size.ts';
import type { TopicRules } from '../../topology/topic-rules.ts';
import { wordSchema, type WordEvent } from './fixtures.ts';
import { padTopology, releaseTopology, scalerTopology } from './poison-fixtures.ts';

/**
 * Production errors (docs/design.md, "Runtime"): an output a sink node cannot write — its serde refuses
 * the value, it is over the topic's record limit, or it has no key for a compacted topic — never
 * stops the task. With an input record, that record goes to the DLQ; from a punctuator, the output
 * does.
 */

const rules =
  (byTopic: Record<string, Partial<TopicRules>>) =>
  (topic: string): TopicRules => ({ maxRecordBytes: DEFAULT_MAX_RECORD_BYTES, keyRequired: false, ...byTopic[topic] });

describe('production errors', () => {
  for (const { word, value } of [
    { word: 'huge', value: '1e20' },
    { word: 'fraction', value: '0.5' },
  ]) {
    test(`an Avro long given ${value} while processing: the input goes to the DLQ, its other output stands, the next record flows`, async () => {
      const driver = new TopologyTestDriver(scalerTopology(), { dlqTopic: 'dlq' });
      await driver.pipeInput('words', 'k', { word: 'ok', seq: 1 });
      await driver.pipeInput('words', 'k', { word, seq: 2 }, { headers: { 'trace-id': 't-2' } });
      await driver.pipeInput('words', 'k', { word: 'next', seq: 3 });

      assert.deepEqual(
        driver.readAllOutputs<string, WordEvent>('scaled').map((r) => ({ ...r.value })),
        [
          { word: 'ok', seq: 1 },
          { word: 'next', seq: 3 },
        ],
      );
      assert.deepEqual(
        driver.readAllOutputs('audit').map((r) => r.value),
        [{ seen: 'ok' }, { seen: word }, { seen: 'next' }],
      );
      const letters = driver.readAllOutputs<Buffer, Buffer>('dlq');
      assert.equal(letters.length, 1);
      const h = letters[0]!.headers;
      assert.deepEqual(
        { ...(avroSerde<WordEvent>(wordSchema).deserialize('words', letters[0]!.value) as WordEvent) },
        { word, seq: 2 },
        'the DLQ keeps the input bytes',
      );
      assert.equal(h[DLQ_HEADERS.phase], 'production');
      assert.equal(h[DLQ_HEADERS.errorCode], 'SERIALIZATION_FAILED');
      assert.match(h[DLQ_HEADERS.errorMessage]!, /seq \(long\)/, 'the reason names the field and its type');
      assert.doesNotMatch(h[DLQ_HEADERS.errorMessage]!, /100000000000000000000|0\.5/, 'the reason does not carry the value');
      assert.equal(h[DLQ_HEADERS.node], 'scaled-sink');
      assert.equal(h[DLQ_HEADERS.sinkTopic], 'scaled');
      assert.equal(h[DLQ_HEADERS.origin], 'process');
      assert.equal(h[DLQ_HEADERS.sourceTopic], 'words');
      assert.equal(h[DLQ_HEADERS.sourceOffset], '1');
      assert.equal(h['trace-id'], 't-2');
    });
  }

  test('a store value over its changelog limit goes to the DLQ, not to the changelog; the task and the value in memory go on', async () => {
    const driver = new TopologyTestDriver(releaseTopology(), {
      dlqTopic: 'dlq',
      startWallClockMs: 1_000_000,
      topicRules: rules({ 'test-app-held-words-changelog': { maxRecordBytes: 1_000 } }),
    });
    await driver.pipeInput('held', 'big', { word: 'w'.repeat(2_000), seq: 1 });
    await driver.pipeInput('held', 'small', { word: 'ok', seq: 2 });
    assert.deepEqual(
      driver.changelog('held-words').map((c) => c.key),
      ['small'],
      'only the value within the limit is written',
    );
    const letters = driver.readAllOutputs<Buffer, Buffer>('dlq');
    assert.equal(letters.length, 1);
    const h = letters[0]!.headers;
    assert.equal(h[DLQ_HEADERS.errorCode], 'CHANGELOG_RECORD_TOO_LARGE');
    assert.equal(h[DLQ_HEADERS.origin], 'changelog:held-words');
    assert.equal(h[DLQ_HEADERS.sinkTopic], 'test-app-held-words-changelog');
    assert.equal(letters[0]!.key?.toString(), 'big', 'the DLQ keeps the store key');
    await driver.advanceWallClockTime(1_000);
    assert.deepEqual(
      driver
        .readAllOutputs<string, WordEvent>('released')
        .map((r) => r.key)
        .sort(),
      ['big', 'small'],
      'the store still holds the value in memory',
    );
  });

  test('the processing-error policy `fail` does not stop the task on a production error', async () => {
    const driver = new TopologyTestDriver(scalerTopology(), { dlqTopic: 'dlq', processingErrorPolicy: 'fail' });
    await driver.pipeInput('words', 'k', { word: 'huge', seq: 1 });
    await driver.pipeInput('words', 'k', { word: 'next', seq: 2 });
    assert.deepEqual(
      driver.readAllOutputs('dlq').map((r) => r.headers[DLQ_HEADERS.errorCode]),
      ['SERIALIZATION_FAILED'],
    );
    assert.deepEqual(
      driver.readAllOutputs<string, WordEvent>('scaled').map((r) => r.value.seq),
      [2],
    );
  });

  test('a punctuator output that cannot be serialized goes to the DLQ itself, rendered, and the punctuation goes on', async () => {
    const driver = new TopologyTestDriver(releaseTopology(), { dlqTopic: 'dlq', startWallClockMs: 1_000_000 });
    await driver.pipeInput('held', 'a', { word: 'a', seq: 1 });
    await driver.pipeInput('held', 'b', { word: 'b', seq: 1e20 });
    await driver.pipeInput('held', 'c', { word: 'c', seq: 3 });
    await driver.advanceWallClockTime(1000);
    await driver.pipeInput('held', 'd', { word: 'd', seq: 4 });
    await driver.advanceWallClockTime(1000);

    assert.deepEqual(
      driver.readAllOutputs<string, WordEvent>('released').map((r) => r.key),
      ['a', 'c', 'd'],
      'every other entry of the same punctuation, and later ones, are released',
    );
    const letters = driver.readAllOutputs<Buffer, Buffer>('dlq');
    assert.equal(letters.length, 1);
    const letter = letters[0]!;
    assert.equal(letter.key?.toString(), 'b');
    assert.equal(letter.value?.toString(), '{"word":"b","seq":100000000000000000000}', 'a faithful rendering of what could not be serialized');
    assert.equal(letter.headers[DLQ_HEADERS.valueFormat], 'json');
    assert.equal(letter.headers[DLQ_HEADERS.phase], 'production');
    assert.equal(letter.headers[DLQ_HEADERS.errorCode], 'SERIALIZATION_FAILED');
    assert.equal(letter.headers[DLQ_HEADERS.origin], 'punctuator:releaser');
    assert.equal(letter.headers[DLQ_HEADERS.node], 'released-sink');
    assert.equal(letter.headers[DLQ_HEADERS.sinkTopic], 'released');
    assert.equal(letter.headers[DLQ_HEADERS.taskId], '0_0');
    assert.equal(letter.headers[DLQ_HEADERS.sourceOffset], undefined, 'no input record');
    assert.equal(letter.headers['trace-id'], 't-b', 'the output headers are kept');
    assert.equal(driver.getStateStore<KeyValueStore<WordEvent>>('held-words').get('b'), undefined, 'the entry is gone: it cannot fail again after a restart');
  });

  test('an output over the record limit sends its input to the DLQ with RECORD_TOO_LARGE; a smaller one right after flows', async () => {
    const driver = new TopologyTestDriver(padTopology(100), { dlqTopic: 'dlq', topicRules: rules({ padded: { maxRecordBytes: 2048 } }) });
    await driver.pipeInput('blobs', 'k', Buffer.alloc(1947, 1)); // key 1 + value 1947 + 100 = 2048: at the limit
    await driver.pipeInput('blobs', 'k', Buffer.alloc(1948, 2)); // one byte over
    await driver.pipeInput('blobs', 'k', Buffer.alloc(10, 3));
    assert.deepEqual(
      driver.readAllOutputs<string, Buffer>('padded').map((r) => r.value.length),
      [2047, 110],
    );
    const [letter, ...more] = driver.readAllOutputs<Buffer, Buffer>('dlq');
    assert.equal(more.length, 0);
    assert.equal(letter?.headers[DLQ_HEADERS.errorCode], 'RECORD_TOO_LARGE');
    assert.equal(letter?.headers[DLQ_HEADERS.phase], 'production');
    assert.equal(letter?.headers[DLQ_HEADERS.sourceOffset], '1');
    assert.match(letter!.headers[DLQ_HEADERS.errorMessage]!, /2049 bytes .* limit of 2048 bytes/);
    assert.deepEqual(letter?.value, Buffer.alloc(1948, 2), 'the DLQ keeps the input, not the output');
  });

  test('header bytes count towards the limit, multi-byte characters by their UTF-8 size', async () => {
    // 'ü' is 2 bytes in UTF-8: header name 1 + value 2 × 50 + 10 bytes of framing = 111.
    const driver = new TopologyTestDriver(padTopology(0, { h: 'ü'.repeat(50) }), { dlqTopic: 'dlq', topicRules: rules({ padded: { maxRecordBytes: 1000 } }) });
    await driver.pipeInput('blobs', 'k', Buffer.alloc(1000 - 1 - 111, 1));
    await driver.pipeInput('blobs', 'k', Buffer.alloc(1000 - 1 - 111 + 1, 1));
    assert.equal(driver.readAllOutputs('padded').length, 1);
    assert.deepEqual(
      driver.readAllOutputs('dlq').map((r) => r.headers[DLQ_HEADERS.errorCode]),
      ['RECORD_TOO_LARGE'],
    );
  });

  test('a keyless output for a compacted topic is refused at the sink node (the broker would refuse the whole transaction)', async () => {
    const driver = new TopologyTestDriver(padTopology(1), { dlqTopic: 'dlq', topicRules: rules({ padded: { keyRequired: true } }) });
    await driver.pipeInput('blobs', null, Buffer.from('no key'));
    await driver.pipeInput('blobs', 'k', Buffer.from('keyed'));
    assert.deepEqual(
      driver.readAllOutputs<string, Buffer>('padded').map((r) => r.key),
      ['k'],
    );
    assert.deepEqual(
      driver.readAllOutputs('dlq').map((r) => r.headers[DLQ_HEADERS.errorCode]),
      ['INVALID_RECORD'],
    );
  });

  test("a dead letter over the DLQ topic's own limit keeps its reason but leaves its value out", async () => {
    const driver = new TopologyTestDriver(padTopology(10), {
      dlqTopic: 'dlq',
      topicRules: rules({ padded: { maxRecordBytes: 1024 }, dlq: { maxRecordBytes: 1500 } }),
    });
    await driver.pipeInput('blobs', 'k', Buffer.alloc(1400, 7));
    const [letter] = driver.readAllOutputs<Buffer, Buffer | null>('dlq');
    assert.equal(letter?.value, null);
    assert.equal(letter?.headers[DLQ_HEADERS.valueOmittedBytes], '1400');
    assert.equal(letter?.headers[DLQ_HEADERS.errorCode], 'RECORD_TOO_LARGE');
    assert.ok(recordBytes(letter!.key as Buffer | null, null, letter!.headers) <= 1500);
  });
});

describe('record sizes and DLQ renderings', () => {
  test('recordBytes counts key, value, UTF-8 header bytes and 10 bytes of framing per header; oversizeBytes is 0 within the limit', () => {
    const key = Buffer.from('key');
    const value = Buffer.alloc(100);
    const headers = { a: 'b', ü: '日本' };
    assert.equal(recordBytes(key, value, headers), 3 + 100 + (1 + 1 + 10) + (2 + 6 + 10));
    assert.equal(oversizeBytes(key, value, headers, 133), 0);
    assert.equal(oversizeBytes(key, value, headers, 132), 133);
    assert.equal(oversizeBytes(null, null, {}, 0), 0);
    assert.equal(DEFAULT_MAX_RECORD_BYTES, 1_048_588 - 128);
  });

  test('renderForDeadLetter tags what JSON cannot hold instead of losing it', () => {
    const rendered = JSON.parse(
      renderForDeadLetter({ a: undefined, b: 10n, c: NaN, d: -Infinity, e: Buffer.from([1, 2]), f: [undefined, 1e20, 0.5] }).toString(),
    );
    assert.deepEqual(rendered, {
      a: { $undefined: true },
      b: { $bigint: '10' },
      c: { $number: 'NaN' },
      d: { $number: '-Infinity' },
      e: { $bytes: 'AQI=' },
      f: [{ $undefined: true }, 1e20, 0.5],
    });
    const cyclic: Record<string, unknown> = { name: 'loop' };
    cyclic.self = cyclic;
    assert.match(renderForDeadLetter(cyclic).toString(), /\$inspect.*loop/);
  });

  test('fitDeadLetter leaves a letter within the limit as it is', () => {
    const letter = { topic: 'dlq', key: Buffer.from('k'), value: Buffer.alloc(10), timestamp: 1, headers: { [DLQ_HEADERS.errorCode]: 'X' } };
    assert.equal(fitDeadLetter(letter, 1000), letter);
    const trimmed = fitDeadLetter({ ...letter, headers: { ...letter.headers, big: 'x'.repeat(2000) } }, 1000);
    assert.equal(trimmed.key, null);
    assert.deepEqual(
      Object.keys(trimmed.headers).sort(),
      [DLQ_HEADERS.errorCode, DLQ_HEADERS.valueOmittedBytes].sort(),
      'only the reason survives a huge original header',
    );
  });
});
