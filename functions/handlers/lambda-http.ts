import { handle } from "hono/aws-lambda";
import { createApp } from "../app.ts";
import { type LambdaEnvironment, lambdaDependencies } from "./lambda.ts";

/** The HTTP API on Lambda (Function URL or API Gateway HTTP API): the same app as the local server. */
export function createHttpHandler(env: LambdaEnvironment) {
  const { store, observer } = lambdaDependencies(env);
  // A Lambda request body is at most 6 MB; gzip'd bodies inflate to at most the app's 8 MiB limit.
  return handle(createApp({ store, observer }));
}

let httpHandler: ReturnType<typeof createHttpHandler> | undefined;
/** Built on first use (and kept across warm invocations), so that importing this module has no effects. */
export const handler: ReturnType<typeof createHttpHandler> = (event, context) => {
  httpHandler ??= createHttpHandler(process.env);
  return httpHandler(event, context);
};
