import { createAPI, type Reader, Writer } from "@platformatic/kafka";

/**
 * The two Kafka protocol APIs the agent needs that @platformatic/kafka does not carry, written on its
 * Writer and Reader. Both are flexible versions (compact strings and arrays, tagged fields). Field
 * names follow Kafka's clients/src/main/resources/common/message/*.json.
 */

/** DescribeCluster (60) v2, KIP-1073: the only client API that lists fenced brokers. */
export interface DescribeClusterV2Response {
  errorCode: number;
  errorMessage: string | null;
  clusterId: string;
  controllerId: number;
  brokers: { brokerId: number; host: string; port: number; rack: string | null; isFenced: boolean }[];
}

export const describeClusterV2 = createAPI<[includeFencedBrokers: boolean], DescribeClusterV2Response>(
  60,
  2,
  (includeFencedBrokers: boolean) =>
    Writer.create()
      .appendBoolean(false) // IncludeClusterAuthorizedOperations
      .appendInt8(1) // EndpointType: brokers
      .appendBoolean(includeFencedBrokers)
      .appendTaggedFields(),
  (_correlationId: number, _apiKey: number, _apiVersion: number, reader: Reader) => {
    reader.readInt32(); // ThrottleTimeMs
    const errorCode = reader.readInt16();
    const errorMessage = reader.readNullableString();
    reader.readInt8(); // EndpointType
    const clusterId = reader.readString();
    const controllerId = reader.readInt32();
    const brokers = reader.readArray((r) => ({
      brokerId: r.readInt32(),
      host: r.readString(),
      port: r.readInt32(),
      rack: r.readNullableString(),
      isFenced: r.readBoolean(),
    }));
    reader.readInt32(); // ClusterAuthorizedOperations
    return { errorCode, errorMessage, clusterId, controllerId, brokers };
  },
);

/** ElectLeaders (43) v2. Election type 0 is PREFERRED: the only broker it can elect is replicas[0]. */
export interface ElectLeadersV2Response {
  errorCode: number;
  results: {
    topic: string;
    partitions: { partition: number; errorCode: number; errorMessage: string | null }[];
  }[];
}

export const ELECTION_TYPE_PREFERRED = 0;

export const electLeadersV2 = createAPI<
  [electionType: number, topics: { topic: string; partitions: number[] }[], timeoutMs: number],
  ElectLeadersV2Response
>(
  43,
  2,
  (electionType: number, topics: { topic: string; partitions: number[] }[], timeoutMs: number) =>
    Writer.create()
      .appendInt8(electionType)
      .appendArray(topics, (w, t) =>
        w.appendString(t.topic).appendArray(t.partitions, (pw, p) => pw.appendInt32(p), true, false),
      )
      .appendInt32(timeoutMs)
      .appendTaggedFields(),
  (_correlationId: number, _apiKey: number, _apiVersion: number, reader: Reader) => {
    reader.readInt32(); // ThrottleTimeMs
    const errorCode = reader.readInt16();
    const results = reader.readArray((r) => ({
      topic: r.readString(),
      partitions: r.readArray((pr) => ({
        partition: pr.readInt32(),
        errorCode: pr.readInt16(),
        errorMessage: pr.readNullableString(),
      })),
    }));
    return { errorCode, results };
  },
);
