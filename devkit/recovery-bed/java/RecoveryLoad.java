import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.FileReader;
import java.io.FileWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.HdrHistogram.Histogram;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The recovery bench's load, with Kafka's own Java producer (the client applications use):
 *
 * <ul>
 *   <li>{@code load}: an open-loop producer. Record i is due at start + i / rate; the latency of a
 *       record is measured from that intended time, not from when send() was reached, so a stall
 *       shows up as latency instead of as fewer samples (no coordinated omission). One line per
 *       record: intended time (ms since the epoch), latency (µs), the error's class or "-", and its
 *       topic-partition.
 *       Runs until standard input closes.
 *   <li>{@code bulk}: produces about N bytes as fast as the cluster takes them, unevenly (partition
 *       k gets a share growing with k % 10), so a broker catching up finishes small partitions first.
 *   <li>{@code report}: reads a load file and prints, as JSON, HdrHistogram percentiles for named
 *       windows and P99 per bucket. A failed record counts at the time it took to fail, and as an
 *       error; nothing is dropped.
 * </ul>
 */
public final class RecoveryLoad {
  public static void main(String[] args) throws Exception {
    Map<String, String> options = parse(args);
    switch (args.length > 0 ? args[0] : "") {
      case "load" -> load(options);
      case "bulk" -> bulk(options);
      case "report" -> report(options);
      case "throttle" -> throttle(options);
      default -> {
        System.err.println("usage: RecoveryLoad load|bulk|report --option value ...");
        System.exit(2);
      }
    }
  }

  private static Map<String, String> parse(String[] args) {
    Map<String, String> options = new HashMap<>();
    for (int i = 1; i + 1 < args.length; i += 2) options.put(args[i].replaceFirst("^--", ""), args[i + 1]);
    return options;
  }

  private static String required(Map<String, String> options, String name) {
    String value = options.get(name);
    if (value == null) throw new IllegalArgumentException("missing --" + name);
    return value;
  }

  private static KafkaProducer<byte[], byte[]> producer(Map<String, String> options, String clientId) {
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, required(options, "bootstrap"));
    props.put(ProducerConfig.CLIENT_ID_CONFIG, clientId);
    props.put(ProducerConfig.ACKS_CONFIG, "all");
    props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "30000");
    props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    if (options.containsKey("batch-bytes")) props.put(ProducerConfig.BATCH_SIZE_CONFIG, options.get("batch-bytes"));
    if (options.containsKey("linger-ms")) props.put(ProducerConfig.LINGER_MS_CONFIG, options.get("linger-ms"));
    if (options.containsKey("buffer-bytes")) props.put(ProducerConfig.BUFFER_MEMORY_CONFIG, options.get("buffer-bytes"));
    return new KafkaProducer<>(props);
  }

  private record Partition(String topic, int partition) {}

  private static List<Partition> partitions(Map<String, String> options) {
    int perTopic = Integer.parseInt(required(options, "partitions-per-topic"));
    List<Partition> all = new ArrayList<>();
    for (String topic : required(options, "topics").split(","))
      for (int p = 0; p < perTopic; p++) all.add(new Partition(topic, p));
    return all;
  }

  private static void load(Map<String, String> options) throws Exception {
    double rate = Double.parseDouble(required(options, "rate"));
    byte[] value = new byte[Integer.parseInt(options.getOrDefault("size", "1024"))];
    List<Partition> targets = partitions(options);
    ConcurrentLinkedQueue<String> lines = new ConcurrentLinkedQueue<>();
    AtomicBoolean running = new AtomicBoolean(true);
    AtomicLong outstanding = new AtomicLong();
    // Standard input closing (the bench ending, or dying) stops the schedule.
    Thread stdin = new Thread(() -> {
      try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in))) {
        while (in.readLine() != null) {}
      } catch (IOException ignored) {
      }
      running.set(false);
    });
    stdin.setDaemon(true);
    stdin.start();
    // Every record opens a batch of its own (a partition sees one every few seconds), and the producer
    // reserves batch.size for each: small batches and a large buffer, so that send() never blocks on
    // memory while records wait for their acks, which would hold back every record after them.
    options.putIfAbsent("batch-bytes", "4096");
    options.putIfAbsent("buffer-bytes", String.valueOf(256L * 1024 * 1024));
    try (KafkaProducer<byte[], byte[]> producer = producer(options, "recovery-load");
        BufferedWriter out = new BufferedWriter(new FileWriter(required(options, "out")))) {
      warmUp(producer, targets, value);
      Thread writer = new Thread(() -> {
        try {
          while (running.get() || outstanding.get() > 0 || !lines.isEmpty()) {
            for (String line = lines.poll(); line != null; line = lines.poll()) out.write(line);
            out.flush();
            Thread.sleep(200);
          }
        } catch (Exception e) {
          throw new RuntimeException(e);
        }
      });
      writer.start();
      long periodNs = (long) (1e9 / rate);
      long startNs = System.nanoTime();
      long startEpochMs = System.currentTimeMillis();
      System.out.println("started " + startEpochMs);
      System.out.flush();
      for (long i = 0; running.get(); i++) {
        long dueNs = startNs + i * periodNs;
        long waitNs = dueNs - System.nanoTime();
        if (waitNs > 0) LockSupport.parkNanos(waitNs);
        long intendedEpochMs = startEpochMs + (dueNs - startNs) / 1_000_000;
        Partition target = targets.get((int) (i % targets.size()));
        String where = target.topic() + "-" + target.partition();
        outstanding.incrementAndGet();
        try {
          producer.send(new ProducerRecord<>(target.topic(), target.partition(), null, value), (meta, error) -> {
            long latencyUs = (System.nanoTime() - dueNs) / 1000;
            String kind = error == null ? "-" : error.getClass().getSimpleName();
            lines.add(intendedEpochMs + "," + latencyUs + "," + kind + "," + where + "\n");
            outstanding.decrementAndGet();
          });
        } catch (Exception error) {
          // send() itself refused the record (metadata not available within max.block.ms, say).
          long latencyUs = (System.nanoTime() - dueNs) / 1000;
          lines.add(intendedEpochMs + "," + latencyUs + "," + error.getClass().getSimpleName() + "," + where + "\n");
          outstanding.decrementAndGet();
        }
      }
      producer.flush();
      writer.join();
    }
  }

  /**
   * Metadata for every topic and a connection to every leader before the schedule starts: the first
   * send to a topic blocks on its metadata, and a schedule started cold begins seconds behind.
   */
  private static void warmUp(KafkaProducer<byte[], byte[]> producer, List<Partition> targets, byte[] value)
      throws Exception {
    List<Future<RecordMetadata>> acks = new ArrayList<>();
    for (Partition p : targets) acks.add(producer.send(new ProducerRecord<>(p.topic(), p.partition(), null, value)));
    for (Future<RecordMetadata> ack : acks) ack.get();
  }

  private static void bulk(Map<String, String> options) throws Exception {
    long totalBytes = Long.parseLong(required(options, "bytes"));
    int recordBytes = 16 * 1024;
    byte[] value = new byte[recordBytes];
    List<Partition> targets = partitions(options);
    int perTopic = Integer.parseInt(required(options, "partitions-per-topic"));
    double weightSum = 0;
    for (Partition p : targets) weightSum += (p.partition() % 10) + 1;
    // 64 KiB batches, as busy producers send: a follower fetching with a smaller replica.fetch.max.bytes
    // would otherwise take one batch per request.
    options.putIfAbsent("batch-bytes", String.valueOf(64 * 1024));
    options.putIfAbsent("linger-ms", "20");
    AtomicLong failed = new AtomicLong();
    // At most 64 MiB in flight, so the producer's buffer never blocks for long.
    Semaphore inFlight = new Semaphore(4096);
    long started = System.currentTimeMillis();
    long records = 0;
    try (KafkaProducer<byte[], byte[]> producer = producer(options, "recovery-bulk")) {
      for (Partition p : targets) {
        long n = Math.max(1, Math.round(totalBytes * ((p.partition() % 10) + 1) / weightSum / recordBytes));
        for (long i = 0; i < n; i++) {
          inFlight.acquire();
          records++;
          producer.send(new ProducerRecord<>(p.topic(), p.partition(), null, value), (meta, error) -> {
            if (error != null) failed.incrementAndGet();
            inFlight.release();
          });
        }
      }
      producer.flush();
    }
    System.out.printf(
        "{\"records\":%d,\"bytes\":%d,\"failed\":%d,\"ms\":%d,\"partitionsPerTopic\":%d}%n",
        records, records * recordBytes, failed.get(), System.currentTimeMillis() - started, perTopic);
    if (failed.get() > 0) System.exit(1);
  }

  /**
   * Kafka's own replication throttle on one broker's fetching as a follower
   * ({@code follower.replication.throttled.rate} on the broker, {@code
   * follower.replication.throttled.replicas=*} on the topics), or its removal with {@code --rate-bytes
   * 0}. Kafka never throttles a partition whose replica on that broker is in the ISR.
   */
  private static void throttle(Map<String, String> options) throws Exception {
    long rate = Long.parseLong(required(options, "rate-bytes"));
    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, required(options, "bootstrap"));
    try (Admin admin = Admin.create(props)) {
      Map<ConfigResource, java.util.Collection<AlterConfigOp>> changes = new HashMap<>();
      ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, required(options, "broker"));
      ConfigEntry rateEntry = new ConfigEntry("follower.replication.throttled.rate", String.valueOf(rate));
      changes.put(broker, List.of(new AlterConfigOp(rateEntry, rate > 0 ? AlterConfigOp.OpType.SET : AlterConfigOp.OpType.DELETE)));
      for (String topic : required(options, "topics").split(",")) {
        ConfigEntry replicas = new ConfigEntry("follower.replication.throttled.replicas", "*");
        changes.put(
            new ConfigResource(ConfigResource.Type.TOPIC, topic),
            List.of(new AlterConfigOp(replicas, rate > 0 ? AlterConfigOp.OpType.SET : AlterConfigOp.OpType.DELETE)));
      }
      admin.incrementalAlterConfigs(changes).all().get();
    }
  }

  /** A window of the load: [fromMs, toMs) in intended-send time. */
  private record Window(String name, long fromMs, long toMs) {}

  private static final class Tally {
    final Histogram histogram = new Histogram(3_600_000_000L, 3);
    long errors;
    long timeouts;
    final Map<String, Long> errorKinds = new LinkedHashMap<>();

    void add(long latencyUs, String kind) {
      histogram.recordValue(Math.max(1, Math.min(latencyUs, histogram.getHighestTrackableValue())));
      if (!kind.equals("-")) {
        errors++;
        if (kind.equals(TimeoutException.class.getSimpleName())) timeouts++;
        errorKinds.merge(kind, 1L, Long::sum);
      }
    }

    String json() {
      StringBuilder kinds = new StringBuilder("{");
      errorKinds.forEach((k, v) -> kinds.append(kinds.length() > 1 ? "," : "").append('"').append(k).append("\":").append(v));
      kinds.append('}');
      return String.format(
          "{\"count\":%d,\"p50Ms\":%.3f,\"p99Ms\":%.3f,\"p999Ms\":%.3f,\"maxMs\":%.3f,\"errors\":%d,\"timeouts\":%d,\"errorKinds\":%s}",
          histogram.getTotalCount(),
          histogram.getValueAtPercentile(50) / 1000.0,
          histogram.getValueAtPercentile(99) / 1000.0,
          histogram.getValueAtPercentile(99.9) / 1000.0,
          histogram.getMaxValue() / 1000.0,
          errors,
          timeouts,
          kinds);
    }
  }

  private static void report(Map<String, String> options) throws Exception {
    List<Window> windows = new ArrayList<>();
    for (String spec : required(options, "windows").split(",")) {
      String[] parts = spec.split(":");
      windows.add(new Window(parts[0], Long.parseLong(parts[1]), Long.parseLong(parts[2])));
    }
    long bucketMs = Long.parseLong(options.getOrDefault("bucket-ms", "5000"));
    long originMs = Long.parseLong(required(options, "origin-ms"));
    long bucketFromMs = Long.parseLong(required(options, "buckets-from-ms"));
    long bucketToMs = Long.parseLong(required(options, "buckets-to-ms"));
    Map<String, Tally> byWindow = new LinkedHashMap<>();
    for (Window w : windows) byWindow.put(w.name(), new Tally());
    Map<Long, Tally> buckets = new java.util.TreeMap<>();
    try (BufferedReader in = new BufferedReader(new FileReader(required(options, "in")))) {
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        String[] f = line.split(",");
        if (f.length < 3) continue; // a line cut short when the writer was stopped
        long atMs = Long.parseLong(f[0]);
        long latencyUs = Long.parseLong(f[1]);
        for (Window w : windows)
          if (atMs >= w.fromMs() && atMs < w.toMs()) byWindow.get(w.name()).add(latencyUs, f[2]);
        if (atMs >= bucketFromMs && atMs < bucketToMs) {
          long bucket = Math.floorDiv(atMs - originMs, bucketMs) * bucketMs;
          buckets.computeIfAbsent(bucket, b -> new Tally()).add(latencyUs, f[2]);
        }
      }
    }
    StringBuilder json = new StringBuilder("{\"windows\":{");
    boolean first = true;
    for (Map.Entry<String, Tally> e : byWindow.entrySet()) {
      json.append(first ? "" : ",").append('"').append(e.getKey()).append("\":").append(e.getValue().json());
      first = false;
    }
    json.append("},\"buckets\":[");
    first = true;
    for (Map.Entry<Long, Tally> e : buckets.entrySet()) {
      Histogram h = e.getValue().histogram;
      json.append(first ? "" : ",")
          .append(String.format(
              "{\"fromMs\":%d,\"count\":%d,\"p99Ms\":%.3f,\"maxMs\":%.3f,\"errors\":%d}",
              e.getKey(), h.getTotalCount(), h.getValueAtPercentile(99) / 1000.0, h.getMaxValue() / 1000.0,
              e.getValue().errors));
      first = false;
    }
    json.append("]}");
    System.out.println(json);
  }
}
