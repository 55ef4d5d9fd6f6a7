import type { KafkaCluster } from "./cluster.ts";

export interface DescribedPartition {
  topic: string;
  partition: number;
  leader: number;
  replicas: number[];
  isr: number[];
}

/**
 * Every partition as Kafka's own `kafka-topics --describe` prints it (TopicCommand, from the cluster's
 * release), the reference the agent's snapshot is checked against. Leader "none" is -1.
 */
export async function describeWithKafkaTools(cluster: KafkaCluster): Promise<DescribedPartition[]> {
  const { code, output } = await cluster.runTool("org.apache.kafka.tools.TopicCommand", [
    "--bootstrap-server",
    cluster.bootstrapServers,
    "--describe",
  ]);
  if (code !== 0) throw new Error(`kafka-topics --describe exited ${code}:\n${output}`);
  return [
    ...output.matchAll(/Topic: (\S+)\s+Partition: (\d+)\s+Leader: (\S+)\s+Replicas: (\S+)\s+Isr: (\S*)/g),
  ].map(([, topic, partition, leader, replicas, isr]) => ({
    topic: topic as string,
    partition: Number(partition),
    leader: leader === "none" ? -1 : Number(leader),
    replicas: (replicas as string).split(",").map(Number),
    isr: isr ? (isr as string).split(",").map(Number) : [],
  }));
}
