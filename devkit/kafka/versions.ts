/**
 * The Apache Kafka releases the tests run, all official jars from Maven Central (devkit/kafka/pom.xml).
 * The whole Kafka suite runs on {@link NEWEST}; the compatibility suite runs the agent's core checks on
 * every release of {@link COMPATIBILITY}.
 */

export interface KafkaRelease {
  version: string;
  /** KRaft (a controller quorum) or ZooKeeper mode (gone in 4.0), with that ZooKeeper's version. */
  mode: "kraft" | "zookeeper";
  zookeeper?: string;
}

export const NEWEST: KafkaRelease = { version: "4.4.0", mode: "kraft" };

export const COMPATIBILITY: KafkaRelease[] = [
  { version: "3.7.2", mode: "zookeeper", zookeeper: "3.8.4" },
  { version: "3.9.1", mode: "zookeeper", zookeeper: "3.8.4" },
  { version: "3.9.1", mode: "kraft" },
  { version: "4.0.2", mode: "kraft" },
  { version: "4.2.2", mode: "kraft" },
  NEWEST,
];

export const releaseName = (r: KafkaRelease) =>
  `Kafka ${r.version} (${r.mode === "kraft" ? "KRaft" : `ZooKeeper ${r.zookeeper}`})`;

/**
 * `PACER_KAFKA_VERSIONS=3.9.1,4.4.0` narrows the compatibility suite to those versions (both modes of a
 * version that has two); unset, it runs them all.
 */
export function selectedReleases(filter = process.env.PACER_KAFKA_VERSIONS): KafkaRelease[] {
  const wanted = filter
    ?.split(",")
    .map((v) => v.trim())
    .filter(Boolean);
  return wanted?.length ? COMPATIBILITY.filter((r) => wanted.includes(r.version)) : COMPATIBILITY;
}
