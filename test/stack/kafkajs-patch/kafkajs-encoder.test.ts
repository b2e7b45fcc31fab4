/**
 * The kafkajs varint encoder fix (stack/kafkajs-patch/encoder.patch; that it is installed is
 * test/stack/kafkajs-patch/kafkajs-fixes.test.ts's): the installed encoder writes varints in place and 32-bit
 * varlongs as varints. Every byte it writes must be the
 * protocol's: zigzag then LEB128, checked here against a BigInt reference written out in the test,
 * and a record encoded by kafkajs must decode to what was given.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

interface EncoderInstance {
  writeVarInt(v: number): EncoderInstance;
  writeVarLong(v: number | string): EncoderInstance;
  buffer: Buffer;
}
interface EncoderClass {
  new (): EncoderInstance;
  sizeOfVarInt(v: number): number;
  sizeOfVarLong(v: number | string): number;
}
const Encoder = require('kafkajs/src/protocol/encoder.js') as EncoderClass;
const Decoder = require('kafkajs/src/protocol/decoder.js') as new (b: Buffer) => { offset: number; readVarInt(): number };
type RecordFields = {
  key: Buffer | string | null;
  value: Buffer | string | null;
  headers?: Record<string, string>;
  offsetDelta?: number;
  timestampDelta?: number;
};
const Record = require('kafkajs/src/protocol/recordBatch/record/v0/index.js') as (r: RecordFields) => EncoderInstance;
const decodeRecord = require('kafkajs/src/protocol/recordBatch/record/v0/decoder.js') as (
  d: InstanceType<typeof Decoder>,
  ctx: { firstOffset: string; firstTimestamp: string; magicByte: number },
) => { key: Buffer; value: Buffer; headers: Record<string, Buffer>; offset: string; timestamp: string };

/** Zigzag over `bits`, then unsigned LEB128: the bytes Kafka's varint and varlong fields hold. */
function reference(value: bigint, bits: 32n | 64n): Buffer {
  let u = BigInt.asUintN(Number(bits), (value << 1n) ^ (value >> (bits - 1n)));
  const bytes: number[] = [];
  while (u >= 0x80n) {
    bytes.push(Number(u & 0x7fn) | 0x80);
    u >>= 7n;
  }
  bytes.push(Number(u));
  return Buffer.from(bytes);
}

const INT32 = [0, 1, -1, 63, -64, 64, -65, 127, 128, 8191, 8192, -8193, 2 ** 20, -(2 ** 20), 2 ** 31 - 1, -(2 ** 31)];

test('varints and varlongs are zigzag LEB128, 32-bit values and wider ones alike', () => {
  const random = Array.from({ length: 2000 }, (_, i) => Math.floor((Math.random() - 0.5) * 2 ** (1 + (i % 32))));
  for (const v of [...INT32, ...random]) {
    const asInt = new Encoder().writeVarInt(v).buffer;
    assert.deepEqual(asInt, reference(BigInt(v), 32n), `varint ${v}`);
    assert.equal(Encoder.sizeOfVarInt(v), asInt.length);
    const asLong = new Encoder().writeVarLong(v).buffer;
    assert.deepEqual(asLong, reference(BigInt(v), 64n), `varlong ${v}`);
    assert.equal(Encoder.sizeOfVarLong(v), asLong.length, `size of varlong ${v}`);
  }
  for (const v of [2 ** 31, -(2 ** 31) - 1, 2 ** 40 + 3, -(2 ** 45), Number.MAX_SAFE_INTEGER, '1764979200000', '-9223372036854775808']) {
    const bytes = new Encoder().writeVarLong(v).buffer;
    assert.deepEqual(bytes, reference(BigInt(v), 64n), `varlong ${v}`);
    assert.equal(Encoder.sizeOfVarLong(v), bytes.length, `size of varlong ${v}`);
  }
});

test('a record with key, value and headers decodes to what was encoded', () => {
  const value = Buffer.from('v'.repeat(300)); // a length over one varint byte
  const encoded = Record({ key: 'u-42', value, headers: { trace: 'abc', empty: '' }, offsetDelta: 7, timestampDelta: 1234 }).buffer;
  const decoder = new Decoder(encoded);
  assert.equal(decoder.readVarInt() + decoder.offset, encoded.length, 'the length field counts the rest of the record');
  const decoded = decodeRecord(decoder, { firstOffset: '100', firstTimestamp: '1764979200000', magicByte: 2 });
  assert.equal(decoded.key.toString(), 'u-42');
  assert.deepEqual(decoded.value, value);
  assert.equal(decoded.headers.trace!.toString(), 'abc');
  assert.equal(decoded.headers.empty!.toString(), '');
  assert.equal(decoded.offset, '107');
  assert.equal(decoded.timestamp, '1764979201234');
});
