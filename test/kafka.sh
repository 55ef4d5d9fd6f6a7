#!/usr/bin/env bash
# The real-Kafka suite in two parts side by side (see vitest.kafka.config.ts): every release's core
# checks, and the newest release's full suite. Each part's lines carry its name;
# the status is non-zero if either part failed.
set -uo pipefail
cd "$(dirname "$0")/.."
# Resolve every release's jars first, one Maven at a time, so that the two parts never race for them.
node --import tsx -e '
  import("./devkit/kafka/cluster.ts").then(async ({ kafkaClasspath }) => {
    const { COMPATIBILITY } = await import("./devkit/kafka/versions.ts");
    for (const release of COMPATIBILITY) kafkaClasspath(release);
  });
' || exit 1
run() {
  PACER_KAFKA_PART=$1 npx vitest run --config vitest.kafka.config.ts 2>&1 | sed -u "s/^/[$1] /"
}
run matrix & matrix=$!
run newest & newest=$!
wait $matrix; matrix_status=$?
wait $newest; newest_status=$?
exit $(( matrix_status || newest_status ))
