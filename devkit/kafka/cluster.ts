import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { Admin } from "@platformatic/kafka";
import { KafkaAdminClient } from "../../functions/kafka/admin.ts";
import { mavenClasspath } from "../maven.ts";
import { freePort } from "../processes.ts";
import { type KafkaRelease, NEWEST } from "./versions.ts";

/**
 * A real Apache Kafka cluster for the tests: the official jars from Maven Central (devkit/kafka/pom.xml,
 * fetched by Maven into its local repository once per release), and N brokers beside one KRaft
 * controller or, for a 3.x release in ZooKeeper mode, one ZooKeeper server, each a JVM of its own on
 * loopback with free ports. Brokers can be stopped (SIGTERM: controlled shutdown; SIGKILL: unclean) and
 * started again on the same log dirs.
 */

const POM = resolve("devkit/kafka/pom.xml");
const CACHE = resolve(".kafka");
export const CONTROLLER_ID = 100;

/** Every JVM started here, killed when this process exits however it exits: no orphaned brokers. */
const running = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

/** A release's jars (with ZooKeeper's for ZooKeeper mode), resolved by Maven the first time. */
export const kafkaClasspath = (release: KafkaRelease = NEWEST) =>
  mavenClasspath(POM, join(CACHE, `${release.version}-${release.mode}`), {
    "kafka.version": release.version,
    ...(release.zookeeper ? { "zookeeper.version": release.zookeeper } : {}),
  });

const LOG4J = `status = warn
appender.file.type = Console
appender.file.name = out
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.out.ref = out
logger.controller.name = org.apache.kafka.controller
logger.controller.level = info
`;
/** The same for Kafka 3.x, whose SLF4J binding is reload4j (log4j 1). */
const LOG4J_1 = `log4j.rootLogger=WARN, out
log4j.appender.out=org.apache.log4j.ConsoleAppender
log4j.appender.out.layout=org.apache.log4j.PatternLayout
log4j.appender.out.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.kafka.controller=INFO
log4j.logger.kafka.controller=INFO
`;

type Properties = Record<string, string | number | boolean>;

/** The pacer is the balancer unless a test turns Kafka's own on. */
const balancerDefaults: Properties = {
  "auto.leader.rebalance.enable": false,
  "leader.imbalance.check.interval.seconds": 5,
};

export interface KafkaClusterOptions {
  /** The release to run (default {@link NEWEST}); its mode decides KRaft controller or ZooKeeper. */
  release?: KafkaRelease;
  brokers?: number;
  /** KRaft controllers in the quorum (ids 100, 101, …; default 1): 3 for a failover to happen. */
  controllers?: number;
  /**
   * Extra controller properties, e.g. `auto.leader.rebalance.enable`. In ZooKeeper mode every broker
   * gets them: any broker may be elected controller.
   */
  controller?: Properties;
  /** Extra properties for every broker. */
  broker?: Properties;
  /**
   * A second listener on every broker, SASL_PLAINTEXT with PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and
   * OAUTHBEARER (Kafka's unsecured validator: the test's own unsigned tokens), for
   * this user (the PLAIN password in the broker's JAAS line, the SCRAM credentials in the bootstrap
   * metadata); SASL_SSL listeners take the same.
   * KRaft only.
   */
  saslUser?: { username: string; password: string };
  /**
   * Where each node runs, for a bench on a network of its own: its address, and the command prefix
   * that starts it there (e.g. `ip netns exec …`). Ports are then fixed (9092 brokers, 9093 the
   * controller); without it every node listens on loopback on a free port.
   */
  placement?: { host(id: number): string; prefix(id: number): string[] };
  /** TLS listeners on every broker beside PLAINTEXT (KRaft only; certificates: ./certificates.ts). */
  tlsListeners?: TlsListener[];
  /** The jars to run (default: {@link kafkaClasspath}'s Kafka version). */
  classpath?: string;
  /** Heap per broker JVM (default 512 MiB). */
  brokerHeapMb?: number;
}

export interface TlsListener {
  /** The listener's name, upper case: "SSL", "MTLS", … */
  name: string;
  /** SASL_SSL takes the cluster's `saslUser` with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512. */
  protocol: "SSL" | "SASL_SSL";
  /** A PEM file with the broker's private key (PKCS#8, unencrypted) and certificate. */
  keystore: string;
  /** A PEM file with the CA the broker trusts for client certificates. */
  truststore: string;
  /** `ssl.client.auth=required`: the client must present a certificate the truststore verifies. */
  clientAuth?: boolean;
}

/** OAUTHBEARER with Kafka's unsecured validator (the default with no callback handler): any unsigned JWT with a `sub`. */
const SASL_MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"];

/** Per-listener SASL settings: every mechanism, PLAIN's password in its JAAS line, SCRAM's in the metadata. */
function saslListenerProperties(listener: string, user: { username: string; password: string }): Properties {
  const prefix = `listener.name.${listener.toLowerCase()}`;
  return {
    [`${prefix}.sasl.enabled.mechanisms`]: SASL_MECHANISMS.join(","),
    [`${prefix}.plain.sasl.jaas.config`]: `org.apache.kafka.common.security.plain.PlainLoginModule required user_${user.username}="${user.password}";`,
    [`${prefix}.scram-sha-256.sasl.jaas.config`]:
      "org.apache.kafka.common.security.scram.ScramLoginModule required;",
    [`${prefix}.scram-sha-512.sasl.jaas.config`]:
      "org.apache.kafka.common.security.scram.ScramLoginModule required;",
    [`${prefix}.oauthbearer.sasl.jaas.config`]:
      "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
  };
}

function tlsListenerProperties(listener: TlsListener): Properties {
  const prefix = `listener.name.${listener.name.toLowerCase()}`;
  return {
    [`${prefix}.ssl.keystore.type`]: "PEM",
    [`${prefix}.ssl.keystore.location`]: listener.keystore,
    [`${prefix}.ssl.truststore.type`]: "PEM",
    [`${prefix}.ssl.truststore.location`]: listener.truststore,
    [`${prefix}.ssl.client.auth`]: listener.clientAuth ? "required" : "none",
  };
}

interface Node {
  /** A KRaft controller, a ZooKeeper server (ZooKeeper mode's stand-in for one) or a broker. */
  role: "controller" | "zookeeper" | "broker";
  id: number;
  host: string;
  port: number;
  saslPort?: number;
  /** Each TLS listener's port, by name. */
  tlsPorts: Map<string, number>;
  dir: string;
  properties: Properties;
  process?: ChildProcess;
}

export class KafkaCluster {
  private constructor(
    readonly dir: string,
    private readonly classpath: string,
    readonly release: KafkaRelease,
    private readonly controllers: Node[],
    private readonly brokerNodes: Map<number, Node>,
    private readonly options: KafkaClusterOptions,
  ) {}

  /**
   * Starts a cluster of `brokers` brokers (ids 1..N): in KRaft mode storage is formatted for them and
   * one controller first; in ZooKeeper mode a ZooKeeper server is started first.
   */
  static async start(options: KafkaClusterOptions = {}): Promise<KafkaCluster> {
    const release = options.release ?? NEWEST;
    const zookeeperMode = release.mode === "zookeeper";
    if (zookeeperMode && (options.saslUser || options.tlsListeners))
      throw new Error("saslUser and tlsListeners are for KRaft clusters only");
    const tlsListeners = options.tlsListeners ?? [];
    if (tlsListeners.some((l) => l.protocol === "SASL_SSL") && !options.saslUser)
      throw new Error("a SASL_SSL listener needs a saslUser");
    const classpath = options.classpath ?? kafkaClasspath(release);
    const dir = mkdtempSync(join(tmpdir(), "pacer-kafka-"));
    writeFileSync(join(dir, "log4j2.properties"), LOG4J);
    writeFileSync(join(dir, "log4j.properties"), LOG4J_1);
    const placement = options.placement;
    const hostOf = (id: number) => placement?.host(id) ?? "127.0.0.1";
    const portOf = async (fixed: number) => (placement ? fixed : await freePort());
    const controllerCount = zookeeperMode ? 1 : (options.controllers ?? 1);
    const controllerIds = Array.from({ length: controllerCount }, (_, i) => CONTROLLER_ID + i);
    const controllerAddresses = new Map<number, { host: string; port: number }>();
    for (const id of controllerIds)
      controllerAddresses.set(id, { host: hostOf(id), port: await portOf(zookeeperMode ? 2181 : 9093) });
    const { host: controllerHost, port: controllerPort } = controllerAddresses.get(CONTROLLER_ID) as {
      host: string;
      port: number;
    };
    const voters = controllerIds
      .map((id) => {
        const { host, port } = controllerAddresses.get(id) as { host: string; port: number };
        return `${id}@${host}:${port}`;
      })
      .join(",");
    const controllers: Node[] = controllerIds.map((id) => {
      const { host, port } = controllerAddresses.get(id) as { host: string; port: number };
      const nodeDir = join(dir, id === CONTROLLER_ID ? "controller" : `controller-${id}`);
      return {
        role: zookeeperMode ? "zookeeper" : "controller",
        id,
        host,
        port,
        tlsPorts: new Map(),
        dir: nodeDir,
        properties: zookeeperMode
          ? {}
          : {
              "process.roles": "controller",
              "node.id": id,
              "controller.quorum.voters": voters,
              listeners: `CONTROLLER://${host}:${port}`,
              "controller.listener.names": "CONTROLLER",
              "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
              "log.dirs": join(nodeDir, "data"),
              ...balancerDefaults,
              ...options.controller,
            },
      };
    });
    const brokerNodes = new Map<number, Node>();
    for (let id = 1; id <= (options.brokers ?? 3); id++) {
      const host = hostOf(id);
      const port = await portOf(9092);
      const user = options.saslUser;
      const saslPort = user ? await portOf(9094) : undefined;
      const tlsPorts = new Map<string, number>();
      for (const [i, listener] of tlsListeners.entries()) tlsPorts.set(listener.name, await portOf(9095 + i));
      const listeners = [
        `PLAINTEXT://${host}:${port}`,
        ...(user ? [`SASL_PLAINTEXT://${host}:${saslPort}`] : []),
        ...tlsListeners.map((l) => `${l.name}://${host}:${tlsPorts.get(l.name)}`),
      ];
      const protocolMap = [
        "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        ...tlsListeners.map((l) => `${l.name}:${l.protocol}`),
      ].join(",");
      const roleProperties: Properties = zookeeperMode
        ? {
            "broker.id": id,
            "zookeeper.connect": `${controllerHost}:${controllerPort}`,
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT",
            ...balancerDefaults,
            ...options.controller,
          }
        : {
            "process.roles": "broker",
            "node.id": id,
            "controller.quorum.voters": voters,
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": protocolMap,
          };
      brokerNodes.set(id, {
        role: "broker",
        id,
        host,
        port,
        saslPort,
        tlsPorts,
        dir: join(dir, `broker-${id}`),
        properties: {
          ...roleProperties,
          listeners: listeners.join(","),
          "advertised.listeners": listeners.join(","),
          "inter.broker.listener.name": "PLAINTEXT",
          ...(user ? saslListenerProperties("SASL_PLAINTEXT", user) : {}),
          ...Object.assign(
            {},
            ...tlsListeners.map((l) => ({
              ...tlsListenerProperties(l),
              ...(l.protocol === "SASL_SSL" && user ? saslListenerProperties(l.name, user) : {}),
            })),
          ),
          "log.dirs": join(dir, `broker-${id}`, "data"),
          "num.network.threads": 2,
          "num.io.threads": 4,
          "num.partitions": 1,
          "offsets.topic.replication.factor": 1,
          "transaction.state.log.replication.factor": 1,
          "group.initial.rebalance.delay.ms": 0,
          ...options.broker,
        },
      });
    }
    const cluster = new KafkaCluster(dir, classpath, release, controllers, brokerNodes, options);
    if (!zookeeperMode) {
      const clusterId = newClusterId();
      const user = options.saslUser;
      const scram = user
        ? ["SCRAM-SHA-256", "SCRAM-SHA-512"].flatMap((mechanism) => [
            "--add-scram",
            `${mechanism}=[name=${user.username},password=${user.password}]`,
          ])
        : [];
      await Promise.all(
        [...controllers, ...brokerNodes.values()].map((node) =>
          cluster.format(node, clusterId, node.role === "controller" ? scram : []),
        ),
      );
    }
    try {
      for (const controller of controllers) cluster.launch(controller);
      for (const node of brokerNodes.values()) cluster.launch(node);
      await cluster.waitForBrokers([...brokerNodes.keys()]);
    } catch (error) {
      await cluster.close();
      throw error;
    }
    return cluster;
  }

  get bootstrapServers(): string {
    return [...this.brokerNodes.values()].map((n) => `${n.host}:${n.port}`).join(",");
  }

  /** The SASL_PLAINTEXT listeners, when the cluster was started with a `saslUser`. */
  get saslBootstrapServers(): string {
    return [...this.brokerNodes.values()].map((n) => `${n.host}:${n.saslPort}`).join(",");
  }

  /** The brokers whose JVM runs, with their PLAINTEXT listener. */
  runningBrokers(): { id: number; host: string; port: number }[] {
    return [...this.brokerNodes.values()]
      .filter((n) => n.process)
      .map(({ id, host, port }) => ({ id, host, port }));
  }

  /** A TLS listener's bootstrap servers, by its name. */
  tlsBootstrapServers(name: string): string {
    return [...this.brokerNodes.values()].map((n) => `${n.host}:${n.tlsPorts.get(name)}`).join(",");
  }

  brokerIds(): number[] {
    return [...this.brokerNodes.keys()];
  }

  /** Runs one of Kafka's Java tools with the cluster's classpath; resolves with its exit code and output. */
  async runTool(mainClass: string, args: string[]): Promise<{ code: number; output: string }> {
    const child = spawn("java", [...this.jvmOptions(256), "-cp", this.classpath, mainClass, ...args], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout?.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr?.on("data", (chunk) => {
      output += chunk;
    });
    const code = await new Promise<number>((done) => child.once("exit", (c) => done(c ?? 1)));
    return { code, output };
  }

  /**
   * Starts one of Kafka's Java tools that runs until stopped (a console consumer, say), with the
   * cluster's classpath and, if given, a log4j2 configuration of its own; killed with the cluster.
   */
  spawnTool(mainClass: string, args: string[], log4j2Properties?: string): ChildProcess {
    const logConfig = log4j2Properties ? join(this.dir, `${mainClass}-log4j2.properties`) : undefined;
    if (logConfig) writeFileSync(logConfig, log4j2Properties as string);
    const options = this.jvmOptions(256).map((o) =>
      logConfig && o.startsWith("-Dlog4j2.configurationFile=")
        ? `-Dlog4j2.configurationFile=${logConfig}`
        : o,
    );
    const child = spawn("java", [...options, "-cp", this.classpath, mainClass, ...args], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    running.add(child);
    child.once("exit", () => running.delete(child));
    return child;
  }

  /** Stops a broker: SIGTERM is Kafka's controlled shutdown, SIGKILL a crash. Resolves once it exited. */
  async stopBroker(id: number, signal: "SIGTERM" | "SIGKILL" = "SIGTERM"): Promise<void> {
    await this.stop(this.node(id), signal);
  }

  /** Starts a stopped broker on its old log dirs, with extra properties if given; waits until unfenced. */
  async startBroker(id: number, overrides: Properties = {}): Promise<void> {
    const node = this.node(id);
    this.launch(node, overrides);
    await this.waitForBrokers([id]);
  }

  /**
   * Restarts the controllers with other properties (Kafka's balancer settings are read only at start),
   * one after another; they keep them when started again later, as an edited server.properties does.
   */
  async restartController(overrides: Properties): Promise<void> {
    for (const controller of this.controllers) {
      if (controller.role !== "controller") throw new Error("no KRaft controller in ZooKeeper mode");
      await this.stop(controller, "SIGTERM");
      controller.properties = { ...controller.properties, ...overrides };
      this.launch(controller);
    }
    await this.waitForBrokers(this.brokerIds());
  }

  /** The KRaft controllers' ids (one id, the ZooKeeper server's, in ZooKeeper mode). */
  controllerIds(): number[] {
    return this.controllers.map((c) => c.id);
  }

  /**
   * The active controller: the quorum's leader, as Kafka's own `kafka-metadata-quorum` reports it; in
   * ZooKeeper mode the broker that Metadata names.
   */
  async activeController(): Promise<number> {
    if (this.release.mode === "zookeeper") {
      // The controller is a broker, named in Metadata.
      const admin = new Admin({
        clientId: "devkit-controller",
        bootstrapBrokers: this.bootstrapServers.split(","),
      });
      try {
        return (await admin.metadata({ topics: [] })).controllerId;
      } finally {
        await admin.close();
      }
    }
    const { code, output } = await this.runTool("org.apache.kafka.tools.MetadataQuorumCommand", [
      "--bootstrap-server",
      this.bootstrapServers,
      "describe",
      "--status",
    ]);
    const leader = /LeaderId:\s+(\d+)/.exec(output);
    if (code !== 0 || !leader) throw new Error(`kafka-metadata-quorum failed (${code}):\n${output}`);
    return Number(leader[1]);
  }

  /** Stops a controller: SIGKILL is a crash, after which the quorum elects another. */
  async stopController(id: number, signal: "SIGTERM" | "SIGKILL" = "SIGKILL"): Promise<void> {
    await this.stop(this.controllerNode(id), signal);
  }

  /** Starts a stopped controller on its old log dir. */
  startController(id: number): void {
    this.launch(this.controllerNode(id));
  }

  async close(): Promise<void> {
    await Promise.all([...this.brokerNodes.values()].map((n) => this.stop(n, "SIGKILL")));
    await Promise.all(this.controllers.map((n) => this.stop(n, "SIGKILL")));
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** The tail of a node's log, for failure messages. */
  logTail(id: number, lines = 40): string {
    const node = this.controllers.find((c) => c.id === id) ?? this.node(id);
    const file = join(node.dir, "server.log");
    return existsSync(file) ? readFileSync(file, "utf8").split("\n").slice(-lines).join("\n") : "";
  }

  private controllerNode(id: number): Node {
    const node = this.controllers.find((c) => c.id === id);
    if (!node) throw new Error(`no controller ${id}`);
    return node;
  }

  private node(id: number): Node {
    const node = this.brokerNodes.get(id);
    if (!node) throw new Error(`no broker ${id}`);
    return node;
  }

  private jvmOptions(heapMb: number): string[] {
    return [
      `-Xmx${heapMb}m`,
      "-XX:+UseG1GC",
      "-Djava.awt.headless=true",
      `-Dlog4j2.configurationFile=${join(this.dir, "log4j2.properties")}`,
      `-Dlog4j.configuration=file:${join(this.dir, "log4j.properties")}`,
    ];
  }

  private writeProperties(node: Node, overrides: Properties = {}): string {
    mkdirSync(node.dir, { recursive: true });
    const file = join(node.dir, "server.properties");
    const all = { ...node.properties, ...overrides };
    writeFileSync(
      file,
      `${Object.entries(all)
        .map(([k, v]) => `${k}=${v}`)
        .join("\n")}\n`,
    );
    return file;
  }

  private async format(node: Node, clusterId: string, extra: string[]): Promise<void> {
    const file = this.writeProperties(node);
    const { code, output } = await this.runTool("kafka.tools.StorageTool", [
      "format",
      "-t",
      clusterId,
      "-c",
      file,
      ...extra,
    ]);
    if (code !== 0) throw new Error(`formatting node ${node.id} failed:\n${output}`);
  }

  private launch(node: Node, overrides: Properties = {}): void {
    const file = this.writeProperties(node, overrides);
    const log = openSync(join(node.dir, "server.log"), "a");
    const heapMb = node.role === "broker" ? (this.options.brokerHeapMb ?? 512) : 256;
    const main =
      node.role === "zookeeper"
        ? // A standalone ZooKeeper: client port and data dir; no admin server (it would take port 8080).
          [
            "-Dzookeeper.admin.enableServer=false",
            "-cp",
            this.classpath,
            "org.apache.zookeeper.server.ZooKeeperServerMain",
            String(node.port),
            join(node.dir, "data"),
          ]
        : ["-cp", this.classpath, "kafka.Kafka", file];
    const [exe, ...args] = [
      ...(this.options.placement?.prefix(node.id) ?? []),
      "java",
      ...this.jvmOptions(heapMb),
      ...main,
    ];
    node.process = spawn(exe as string, args, { stdio: ["ignore", log, log] });
    const child = node.process;
    running.add(child);
    child.once("exit", () => running.delete(child));
    closeSync(log);
  }

  private async stop(node: Node, signal: "SIGTERM" | "SIGKILL"): Promise<void> {
    const child = node.process;
    node.process = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((done) => child.once("exit", () => done()));
    child.kill(signal);
    await exited;
  }

  /**
   * Waits until each of `ids` is registered and unfenced, as the agent's client reads it (DescribeCluster
   * v2 from Kafka 4.0; before, registered and unfenced brokers are all a client can list).
   */
  private async waitForBrokers(ids: number[], timeoutMs = 120_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last = "no answer yet";
    while (Date.now() < deadline) {
      for (const node of [...this.controllers, ...ids.map((id) => this.node(id))]) {
        if (node.process && node.process.exitCode !== null)
          throw new Error(`Kafka node ${node.id} exited:\n${this.logTail(node.id)}`);
      }
      const running = [...this.brokerNodes.values()].filter((n) => n.process);
      const client = new KafkaAdminClient({
        bootstrapServers: running.map((n) => `${n.host}:${n.port}`),
        requestTimeoutMs: 5_000,
      });
      try {
        const { brokers } = await client.describeCluster();
        const ready = ids.every((id) => brokers.some((b) => b.id === id && !b.fenced));
        if (ready) return;
        last = JSON.stringify(brokers);
      } catch (error) {
        last = (error as Error).message;
      } finally {
        await client.close();
      }
      await delay(500);
    }
    throw new Error(`brokers ${ids.join(",")} not ready in ${timeoutMs} ms (last: ${last})`);
  }
}

/**
 * A random cluster id as Kafka's `Uuid.randomUuid()` makes them: 16 bytes in base64url, never
 * starting with "-" (kafka-storage's argument parser would read such an id as an option).
 */
export function newClusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString("base64url");
    if (!id.startsWith("-")) return id;
  }
}
