#!/usr/bin/env node
// The `pacer` command: runs the TypeScript entry point through tsx, so no build step stands between
// `npm ci` and a working CLI.
import { register } from "tsx/esm/api";

register();
await import("../functions/handlers/cli.ts");
