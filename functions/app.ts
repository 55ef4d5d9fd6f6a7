import type { Hono } from "hono";
import { type AppOptions, createApi } from "./api/app.ts";
import { consolePaths } from "./console/paths.ts";
import { addConsole } from "./console/routes.ts";

/**
 * The one app behind every entry point (the local server, the Lambda handler, the tests): the API,
 * and the console's pages beside it. The API knows nothing of pages; the console reads the store.
 */
// biome-ignore lint/suspicious/noExplicitAny: the console adds routes whatever the API's variables
export function createApp(options: AppOptions): Hono<any> {
  const app = createApi({ ...options, documentedPages: consolePaths() });
  addConsole(app, { store: options.store, clock: options.clock ?? Date.now, auth: options.auth });
  return app;
}
