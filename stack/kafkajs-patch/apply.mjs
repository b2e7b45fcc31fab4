// Installs the project's kafkajs fixes (docs/operations.md, "The kafkajs fixes"):
// stack/kafkajs-patch/sendMessages.cjs over kafkajs' own src/producer/sendMessages.js, two methods
// of src/network/requestQueue/index.js replaced by REQUEST_QUEUE_SCHEDULE and REQUEST_TIMEOUT_CHECK below, and three of
// src/protocol/encoder.js by ENCODER_METHODS. Runs as npm's postinstall and from
// stack/bootstrap.mjs; the workers refuse to start without the first two (common/kafkajs-patch.ts).
// Plain JS: it runs before tsx exists. Only kafkajs 2.2.4 with the files as published is patched;
// any other version or content stops the install, so an upgrade cannot silently drop or misapply a
// fix.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const KAFKAJS_VERSION = '2.2.4';
const ORIGINAL_SHA256 = '8a120e6993955e040a13014cccebd79b8d41e7355d6eda1065fa83fea2fbbcdb';
const REQUEST_QUEUE_SHA256 = 'b55986089c14f8f7bfc377922e2e65b3e4c1e7c7af2752d3b10a75dfe9e9260c';
const ENCODER_SHA256 = '9977889e184a9e910e4f6098c36ec6a0ca36c183aa6ead0f24191b6aa1c9a777';
export const REQUEST_QUEUE_MARK = 'offline-push requestQueue v2';
/**
 * Two timers of every connection. The published scheduleCheckPendingRequests re-arms a timer of
 * (throttledUntil - now) whenever it runs, pending requests or not. That delay is negative once no
 * throttle is in force, so every connection that ever got an answer ran a 1 ms timer for as long as
 * it stayed open: most of an idle worker's CPU. Only pending requests need a later check (an answer
 * or a new request checks the queue too).
 */
const REQUEST_QUEUE_SCHEDULE = `  scheduleCheckPendingRequests() {
    // ${REQUEST_QUEUE_MARK} (stack/kafkajs-patch/apply.mjs): a timer only while requests are pending.
    if (this.pending.length === 0 || this.throttleCheckTimeoutId) return
    const throttledFor = this.throttledUntil - Date.now()
    this.throttleCheckTimeoutId = setTimeout(() => {
      this.throttleCheckTimeoutId = null
      this.checkPendingRequests()
    }, throttledFor > 0 ? throttledFor : CHECK_PENDING_REQUESTS_INTERVAL)
  }
`;

/**
 * The published scheduleRequestTimeoutCheck runs a 100 ms interval on every connection from connect
 * to close, requests in flight or not. A worker holds a connection per transactional producer (one
 * per task), so an idle worker fired ten of these a second per connection to find nothing in flight.
 * The replacement runs the check only while a request is in flight, every second (a tenth of the
 * default 30 s request timeout; never longer than the timeout itself).
 */
const REQUEST_TIMEOUT_CHECK = `  scheduleRequestTimeoutCheck() {
    // ${REQUEST_QUEUE_MARK} (stack/kafkajs-patch/apply.mjs): a timeout check only while requests are in flight.
    if (!this.enforceRequestTimeout) return
    this.destroy()
    this.requestTimeoutIntervalId = null
    const inflight = this.inflight
    const check = () => {
      inflight.forEach(request => {
        if (Date.now() - request.sentAt > request.requestTimeout) {
          request.timeoutRequest()
        }
      })
      if (!this.isConnected()) {
        this.destroy()
        this.requestTimeoutIntervalId = null
      } else if (inflight.size === 0) {
        clearInterval(this.requestTimeoutIntervalId)
        this.requestTimeoutIntervalId = null
      }
    }
    inflight.set = (correlationId, request) => {
      if (this.requestTimeoutIntervalId == null) this.requestTimeoutIntervalId = setInterval(check, Math.min(this.requestTimeout, 1000))
      return Map.prototype.set.call(inflight, correlationId, request)
    }
  }
`;

export const ENCODER_MARK = 'offline-push encoder v1';
/**
 * The published encoder builds an array and a Buffer for every varint it writes, and BigInt-backed
 * Longs for every varlong it sizes or writes: a record's length, timestamp delta, offset delta and
 * key, value and header lengths, about 90 MB of the event-path worker's 1,745 MB allocated over 12 s
 * at 1,000 msgs/s (a sampling heap profile). These write the bytes in place, and a varlong whose
 * value fits 32 bits as the varint it equals (zigzag and LEB128 give the same bytes for it).
 */
const ENCODER_METHODS = {
  '  static sizeOfVarLong(value) {\n': {
    prepend: `    // ${ENCODER_MARK} (stack/kafkajs-patch/apply.mjs): a 32-bit value is sized without Long.
    if (typeof value === 'number' && (value | 0) === value) return Encoder.sizeOfVarInt(value)
`,
  },
  '  writeUVarInt(value) {\n': {
    replace: `  writeUVarInt(value) {
    // ${ENCODER_MARK} (stack/kafkajs-patch/apply.mjs): the bytes go straight into the buffer.
    this.ensureAvailable(5)
    while ((value & UNSIGNED_INT32_MAX_NUMBER) !== 0) {
      this.buf[this.offset++] = (value & OTHER_BITS) | MOST_SIGNIFICANT_BIT
      value >>>= 7
    }
    this.buf[this.offset++] = value & OTHER_BITS
    return this
  }
`,
  },
  '  writeVarLong(value) {\n': {
    prepend: `    // ${ENCODER_MARK} (stack/kafkajs-patch/apply.mjs): a 32-bit value is its varint, written without Long.
    if (typeof value === 'number' && (value | 0) === value) return this.writeVarInt(value)
`,
  },
};

export const FETCH_ORDER_MARK = 'offline-push fetchOrder v1';
const RUNNER_SHA256 = 'fad3247df2e3ba483b94e014e5c5916fd72d7bdfc3b3dfccc5232b60da18306d';
const BATCH_SHA256 = '04ee8657247441599f200af5871ce6b3c4463abe941b97405502f8f5f683face';
/**
 * What a task needs to take its inputs in time order (topology/task-input.ts): which fetch each
 * batch came from, and what the broker said of every partition of that fetch, empty ones included.
 * The published runner drops empty batches without a word and says nothing of the fetch a batch
 * came from. The patched fetch numbers each fetch when it is sent and when it is answered (one counter
 * per consumer), stamps both on the fetch's batches, and hands them all to the FETCH event; a batch
 * keeps the fetch response's last stable offset (what a read_committed consumer can read), which
 * the published Batch drops.
 */
const FETCH_ORDER_METHODS = {
  runner: {
    '  async fetch(nodeId) {\n': {
      replace: `  async fetch(nodeId) {
    // ${FETCH_ORDER_MARK} (stack/kafkajs-patch/apply.mjs): numbered fetches, every batch in FETCH.
    if (!this.running) {
      this.logger.debug('consumer not running, exiting', {
        groupId: this.consumerGroup.groupId,
        memberId: this.consumerGroup.memberId,
      })
      return []
    }
    const startFetch = Date.now()
    const fetchSent = (this.fetchCount = (this.fetchCount || 0) + 1)
    this.instrumentationEmitter.emit(FETCH_START, { nodeId, fetchSent })
    const batches = await this.consumerGroup.fetch(nodeId)
    const fetchAnswered = ++this.fetchCount
    for (const batch of batches) {
      batch.fetchSent = fetchSent
      batch.fetchAnswered = fetchAnswered
    }
    this.instrumentationEmitter.emit(FETCH, {
      numberOfBatches: batches.length,
      duration: Date.now() - startFetch,
      nodeId,
      fetchSent,
      fetchAnswered,
      batches,
    })
    if (batches.length === 0) {
      await this.heartbeat()
    }
    return batches
  }
`,
    },
  },
  batch: {
    '  constructor(topic, fetchedOffset, partitionData) {\n': {
      prepend: `    // ${FETCH_ORDER_MARK} (stack/kafkajs-patch/apply.mjs): what a read_committed consumer can read.
    this.lastStableOffset = partitionData.lastStableOffset
`,
    },
  },
};

export function applyKafkajsPatch(log = (line) => console.log(line)) {
  const pkg = join(root, 'node_modules', 'kafkajs', 'package.json');
  if (!existsSync(pkg)) return false;
  const version = JSON.parse(readFileSync(pkg, 'utf8')).version;
  if (version !== KAFKAJS_VERSION)
    throw new Error(
      `kafkajs ${version} is installed; stack/kafkajs-patch fixes ${KAFKAJS_VERSION} only: check whether ${version} still needs it and update the patch`,
    );
  const producer = patchSendMessages(log);
  const requestQueue = patchMethods(['src', 'network', 'requestQueue', 'index.js'], REQUEST_QUEUE_SHA256, REQUEST_QUEUE_MARK, {
    '  scheduleCheckPendingRequests() {\n': { replace: REQUEST_QUEUE_SCHEDULE },
    '  scheduleRequestTimeoutCheck() {\n': { replace: REQUEST_TIMEOUT_CHECK },
  });
  const encoder = patchMethods(['src', 'protocol', 'encoder.js'], ENCODER_SHA256, ENCODER_MARK, ENCODER_METHODS);
  const runner = patchMethods(['src', 'consumer', 'runner.js'], RUNNER_SHA256, FETCH_ORDER_MARK, FETCH_ORDER_METHODS.runner);
  const batch = patchMethods(['src', 'consumer', 'batch.js'], BATCH_SHA256, FETCH_ORDER_MARK, FETCH_ORDER_METHODS.batch);
  if (requestQueue) log('[bootstrap] kafkajs: request queue timer fixes installed (stack/kafkajs-patch)');
  if (encoder) log('[bootstrap] kafkajs: varint encoder fix installed (stack/kafkajs-patch)');
  if (runner || batch) log('[bootstrap] kafkajs: fetch order fix installed (stack/kafkajs-patch)');
  return producer || requestQueue || encoder || runner || batch;
}

function patchSendMessages(log) {
  const target = join(root, 'node_modules', 'kafkajs', 'src', 'producer', 'sendMessages.js');
  const fixed = readFileSync(join(here, 'sendMessages.cjs'));
  const current = readFileSync(target);
  if (current.equals(fixed)) return false;
  const sha = sha256(current);
  // An earlier version of this fix is replaced as well; anything else is not ours to overwrite.
  if (sha !== ORIGINAL_SHA256 && !current.includes("'offline-push sendMessages "))
    throw new Error(`${target} is neither kafkajs ${KAFKAJS_VERSION}'s file nor the patched one (sha256 ${sha}); reinstall with npm ci`);
  writeFileSync(target, fixed);
  log('[bootstrap] kafkajs: producer retry fix installed (stack/kafkajs-patch)');
  return true;
}

/**
 * Patches methods of a kafkajs file as published, each named by its first line (a key of
 * `methods`): `prepend` goes in right after that line, ahead of the published body; `replace`
 * takes the place of the whole method, through the line that closes it (the first two-space
 * indented `}` after it). False when `mark` is there already.
 */
function patchMethods(path, publishedSha256, mark, methods) {
  const target = join(root, 'node_modules', 'kafkajs', ...path);
  let text = readFileSync(target, 'utf8');
  if (text.includes(mark)) return false;
  const sha = sha256(text);
  const earlier = mark.slice(0, mark.lastIndexOf(' v') + 2);
  if (sha !== publishedSha256 && text.includes(earlier))
    throw Object.assign(new Error(`${target} holds an earlier version of the fix than ${mark}; reinstall with npm ci`), { code: 'EARLIER_FIX' });
  if (sha !== publishedSha256) throw new Error(`${target} is not kafkajs ${KAFKAJS_VERSION}'s file (sha256 ${sha}); reinstall with npm ci`);
  for (const [first, { prepend, replace }] of Object.entries(methods)) {
    const start = text.indexOf(first);
    if (start < 0) throw new Error(`${target}: method ${first.trim()} not found`);
    const bodyStart = start + first.length;
    const end = text.indexOf('\n  }\n', start) + '\n  }\n'.length;
    text = replace === undefined ? text.slice(0, bodyStart) + prepend + text.slice(bodyStart) : text.slice(0, start) + replace + text.slice(end);
  }
  writeFileSync(target, text);
  return true;
}

const sha256 = (data) => createHash('sha256').update(data).digest('hex');

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) applyKafkajsPatch();
