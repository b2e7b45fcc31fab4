// offline-push's replacement for kafkajs 2.2.4 src/producer/sendMessages.js, installed over it by
// stack/kafkajs-patch/apply.mjs (docs/operations.md, "The kafkajs fixes"). It keeps the
// original's interface and error handling and changes what a retry sends:
//
// - The original remembered answers per broker. When a partition's leadership moved to a broker
//   that had already answered for other partitions of the same send (a reassignment, a broker's
//   loss), the retry skipped that broker, so the moved partition's records were never written and
//   send() resolved as if they had been: a silent loss, inside transactions too.
// - The original retried as soon as the first broker failed, while others were still in flight;
//   a partition whose answer was still on its way was then sent again (a duplicate).
//
// Here every partition is acknowledged on its own. A retry waits until every request of the
// attempt has settled, then sends exactly the partitions not yet acknowledged, to their leaders
// as the refreshed metadata names them. Records are grouped per partition in one pass (the
// original copied the partition's list on every record).
const { KafkaJSMetadataNotLoaded } = require('../errors');
const { staleMetadata } = require('../protocol/error');
const createTopicData = require('./createTopicData');
const responseSerializer = require('./responseSerializer');

/** Marks this file as the patched one (stack/kafkajs-patch/apply.mjs checks it). */
const offlinePushFix = 'offline-push sendMessages v1';

function groupPerPartition({ topic, partitionMetadata, messages, partitioner }) {
  const out = {};
  if (partitionMetadata.length === 0) return out;
  for (const message of messages) {
    const partition = partitioner({ topic, partitionMetadata, message });
    const list = out[partition];
    if (list) list.push(message);
    else out[partition] = [message];
  }
  return out;
}

module.exports = ({ logger, cluster, partitioner, eosManager, retrier }) => {
  return async ({ acks, timeout, compression, topicMessages }) => {
    /** `${topic}\u0000${partition}` of every partition the brokers acknowledged in this send. */
    const acknowledged = new Set();
    const responses = [];
    const ackKey = (topic, partition) => `${topic}\u0000${partition}`;

    /** One request per leader, for the partitions of this send not acknowledged yet. */
    const createProducerRequests = async () => {
      await cluster.refreshMetadataIfNecessary();
      /** nodeId → { broker, topicData: [{ topic, partitions, messagesPerPartition }] } */
      const perBroker = new Map();

      for (const { topic, messages } of topicMessages) {
        const partitionMetadata = cluster.findTopicPartitionMetadata(topic);
        if (partitionMetadata.length === 0) {
          logger.debug('Producing to topic without metadata', { topic, targetTopics: Array.from(cluster.targetTopics) });
          throw new KafkaJSMetadataNotLoaded('Producing to topic without metadata');
        }
        const messagesPerPartition = groupPerPartition({ topic, partitionMetadata, messages, partitioner });
        const pending = Object.keys(messagesPerPartition).filter((partition) => !acknowledged.has(ackKey(topic, partition)));
        if (pending.length === 0) continue;
        const partitionsPerLeader = cluster.findLeaderForPartitions(topic, pending);
        for (const nodeId of Object.keys(partitionsPerLeader)) {
          let entry = perBroker.get(nodeId);
          if (!entry) {
            entry = { broker: await cluster.findBroker({ nodeId }), topicData: [] };
            perBroker.set(nodeId, entry);
          }
          entry.topicData.push({ topic, partitions: partitionsPerLeader[nodeId], messagesPerPartition });
        }
      }

      return Array.from(perBroker.values()).map(async ({ broker, topicData: topicDataForBroker }) => {
        const topicData = createTopicData(topicDataForBroker);
        await eosManager.acquireBrokerLock(broker);
        try {
          if (eosManager.isTransactional()) {
            await eosManager.addPartitionsToTransaction(topicData);
          }
          topicData.forEach(({ topic, partitions }) => {
            partitions.forEach((entry) => {
              entry['firstSequence'] = eosManager.getSequence(topic, entry.partition);
              eosManager.updateSequence(topic, entry.partition, entry.messages.length);
            });
          });

          let response;
          try {
            response = await broker.produce({
              transactionalId: eosManager.isTransactional() ? eosManager.getTransactionalId() : undefined,
              producerId: eosManager.getProducerId(),
              producerEpoch: eosManager.getProducerEpoch(),
              acks,
              timeout,
              compression,
              topicData,
            });
          } catch (e) {
            topicData.forEach(({ topic, partitions }) => {
              partitions.forEach((entry) => {
                eosManager.updateSequence(topic, entry.partition, -entry.messages.length);
              });
            });
            throw e;
          }

          if (acks !== 0) responses.push(...responseSerializer(response));
          topicData.forEach(({ topic, partitions }) => partitions.forEach((entry) => acknowledged.add(ackKey(topic, entry.partition))));
        } finally {
          await eosManager.releaseBrokerLock(broker);
        }
      });
    };

    return retrier(async (bail, retryCount, retryTime) => {
      const topics = topicMessages.map(({ topic }) => topic);
      await cluster.addMultipleTargetTopics(topics);

      try {
        const requests = await createProducerRequests();
        // Every request settles before a retry, so that the retry knows what was acknowledged.
        const settled = await Promise.allSettled(requests);
        const failed = settled.find((result) => result.status === 'rejected');
        if (failed) throw failed.reason;
        return responses;
      } catch (e) {
        if (e.name === 'KafkaJSConnectionClosedError') {
          cluster.removeBroker({ host: e.host, port: e.port });
        }

        if (!cluster.isConnected()) {
          logger.debug(`Cluster has disconnected, reconnecting: ${e.message}`, { retryCount, retryTime });
          await cluster.connect();
          await cluster.refreshMetadata();
          throw e;
        }

        // This is necessary in case the metadata is stale and the number of partitions
        // for this topic has increased in the meantime
        if (
          staleMetadata(e) ||
          e.name === 'KafkaJSMetadataNotLoaded' ||
          e.name === 'KafkaJSConnectionError' ||
          e.name === 'KafkaJSConnectionClosedError' ||
          (e.name === 'KafkaJSProtocolError' && e.retriable)
        ) {
          logger.error(`Failed to send messages: ${e.message}`, { retryCount, retryTime });
          await cluster.refreshMetadata();
          throw e;
        }

        logger.error(`${e.message}`, { retryCount, retryTime });
        if (e.retriable) throw e;
        bail(e);
      }
    });
  };
};

module.exports.offlinePushFix = offlinePushFix;
