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
import { KafkaAdminClient } from "../../functions/kafka/admin.ts";
import { mavenClasspath } from "../maven.ts";
import { freePort } from "../processes.ts";

/**
 * A real Apache Kafka KRaft cluster for the tests: the official jars from Maven Central (test/kafka/
 * pom.xml, fetched by Maven into its local repository once), one controller and N brokers as separate
 * JVMs on loopback with free ports. Brokers can be stopped (SIGTERM: controlled shutdown; SIGKILL:
 * unclean) and started again on the same log dirs.
 */

const POM = resolve("devkit/kafka/pom.xml");
const CACHE = resolve(".kafka");
export const CONTROLLER_ID = 100;

/** Every JVM started here, killed when this process exits however it exits: no orphaned brokers. */
const running = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

/** The jars' classpath, resolved by Maven the first time (and whenever the POM changes). */
export const kafkaClasspath = () => mavenClasspath(POM, CACHE);

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

type Properties = Record<string, string | number | boolean>;

export interface KafkaClusterOptions {
  brokers?: number;
  /** Extra controller properties, e.g. `auto.leader.rebalance.enable`. */
  controller?: Properties;
  /** Extra properties for every broker. */
  broker?: Properties;
  /**
   * A second listener on every broker, SASL_PLAINTEXT with PLAIN and SCRAM-SHA-256, for this user
   * (the PLAIN password in the broker's JAAS line, the SCRAM credential in the bootstrap metadata).
   */
  saslUser?: { username: string; password: string };
  /**
   * Where each node runs, for a bench on a network of its own: its address, and the command prefix
   * that starts it there (e.g. `ip netns exec …`). Ports are then fixed (9092 brokers, 9093 the
   * controller); without it every node listens on loopback on a free port.
   */
  placement?: { host(id: number): string; prefix(id: number): string[] };
  /** The jars to run (default: {@link kafkaClasspath}'s Kafka version). */
  classpath?: string;
  /** Heap per broker JVM (default 512 MiB). */
  brokerHeapMb?: number;
}

interface Node {
  id: number;
  host: string;
  port: number;
  saslPort?: number;
  dir: string;
  properties: Properties;
  process?: ChildProcess;
}

export class KafkaCluster {
  private constructor(
    readonly dir: string,
    private readonly classpath: string,
    private readonly controller: Node,
    private readonly brokerNodes: Map<number, Node>,
    private readonly options: KafkaClusterOptions,
  ) {}

  /** Formats storage for one controller and `brokers` brokers (ids 1..N) and starts them all. */
  static async start(options: KafkaClusterOptions = {}): Promise<KafkaCluster> {
    const classpath = options.classpath ?? kafkaClasspath();
    const dir = mkdtempSync(join(tmpdir(), "pacer-kafka-"));
    writeFileSync(join(dir, "log4j2.properties"), LOG4J);
    const placement = options.placement;
    const hostOf = (id: number) => placement?.host(id) ?? "127.0.0.1";
    const portOf = async (fixed: number) => (placement ? fixed : await freePort());
    const controllerHost = hostOf(CONTROLLER_ID);
    const controllerPort = await portOf(9093);
    const voters = `${CONTROLLER_ID}@${controllerHost}:${controllerPort}`;
    const controller: Node = {
      id: CONTROLLER_ID,
      host: controllerHost,
      port: controllerPort,
      dir: join(dir, "controller"),
      properties: {
        "process.roles": "controller",
        "node.id": CONTROLLER_ID,
        "controller.quorum.voters": voters,
        listeners: `CONTROLLER://${controllerHost}:${controllerPort}`,
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
        "log.dirs": join(dir, "controller", "data"),
        // The pacer is the balancer unless a test turns Kafka's own on.
        "auto.leader.rebalance.enable": false,
        "leader.imbalance.check.interval.seconds": 5,
        ...options.controller,
      },
    };
    const brokerNodes = new Map<number, Node>();
    for (let id = 1; id <= (options.brokers ?? 3); id++) {
      const host = hostOf(id);
      const port = await portOf(9092);
      const user = options.saslUser;
      const saslPort = user ? await portOf(9094) : undefined;
      const listeners = [
        `PLAINTEXT://${host}:${port}`,
        ...(user ? [`SASL_PLAINTEXT://${host}:${saslPort}`] : []),
      ];
      brokerNodes.set(id, {
        id,
        host,
        port,
        saslPort,
        dir: join(dir, `broker-${id}`),
        properties: {
          "process.roles": "broker",
          "node.id": id,
          "controller.quorum.voters": voters,
          listeners: listeners.join(","),
          "advertised.listeners": listeners.join(","),
          "inter.broker.listener.name": "PLAINTEXT",
          "controller.listener.names": "CONTROLLER",
          "listener.security.protocol.map":
            "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
          ...(user
            ? {
                "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
                "listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_${user.username}="${user.password}";`,
                "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config":
                  "org.apache.kafka.common.security.scram.ScramLoginModule required;",
              }
            : {}),
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
    const cluster = new KafkaCluster(dir, classpath, controller, brokerNodes, options);
    const clusterId = newClusterId();
    const scram = options.saslUser
      ? [
          "--add-scram",
          `SCRAM-SHA-256=[name=${options.saslUser.username},password=${options.saslUser.password}]`,
        ]
      : [];
    await Promise.all(
      [controller, ...brokerNodes.values()].map((node) =>
        cluster.format(node, clusterId, node === controller ? scram : []),
      ),
    );
    try {
      cluster.launch(controller);
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

  /** Restarts the controller with other properties (Kafka's balancer settings are read only at start). */
  async restartController(overrides: Properties): Promise<void> {
    await this.stop(this.controller, "SIGTERM");
    this.launch(this.controller, overrides);
    await this.waitForBrokers(this.brokerIds());
  }

  async close(): Promise<void> {
    await Promise.all([...this.brokerNodes.values()].map((n) => this.stop(n, "SIGKILL")));
    await this.stop(this.controller, "SIGKILL");
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** The tail of a node's log, for failure messages. */
  logTail(id: number, lines = 40): string {
    const node = id === CONTROLLER_ID ? this.controller : this.node(id);
    const file = join(node.dir, "server.log");
    return existsSync(file) ? readFileSync(file, "utf8").split("\n").slice(-lines).join("\n") : "";
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
    const heapMb = node.id === CONTROLLER_ID ? 256 : (this.options.brokerHeapMb ?? 512);
    const [exe, ...args] = [
      ...(this.options.placement?.prefix(node.id) ?? []),
      "java",
      ...this.jvmOptions(heapMb),
      "-cp",
      this.classpath,
      "kafka.Kafka",
      file,
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

  /** Waits until each of `ids` is registered and unfenced, as DescribeCluster v2 reports. */
  private async waitForBrokers(ids: number[], timeoutMs = 120_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last = "no answer yet";
    while (Date.now() < deadline) {
      for (const node of [this.controller, ...ids.map((id) => this.node(id))]) {
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
