#!/usr/bin/env node
// The `pacer` command: runs the TypeScript entry point through tsx, so no build step stands between
// `npm ci` and a working CLI.
import { register } from "tsx/esm/api";

// The AWS SDK warns on every start that Node 20 support ends; the service runs on 20 by design.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
register();
await import("../functions/handlers/cli.ts");
