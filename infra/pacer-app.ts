import { App, type AppProps, Validations } from "aws-cdk-lib";
import { AwsSolutionsChecks } from "cdk-nag";
import { type ClusterAccessProps, PacerStack } from "./stack.ts";

/**
 * The CDK app with the cdk-nag AwsSolutions checks as a validation plugin: a finding fails synthesis.
 * Clusters the worker reaches itself come from `clusterAccess`, or from the context key
 * `pacer:clusterAccess` (JSON, `-c 'pacer:clusterAccess={…}'` or cdk.json).
 */
export function createPacerApp(
  props: AppProps = {},
  clusterAccess?: ClusterAccessProps,
): { app: App; stack: PacerStack } {
  const app = new App(props);
  const account = app.node.tryGetContext("account") ?? process.env.CDK_DEFAULT_ACCOUNT ?? "000000000000";
  const region = app.node.tryGetContext("region") ?? process.env.CDK_DEFAULT_REGION ?? "us-east-1";
  const fromContext = app.node.tryGetContext("pacer:clusterAccess");
  const access =
    clusterAccess ?? (typeof fromContext === "string" ? JSON.parse(fromContext) : fromContext) ?? undefined;
  const stack = new PacerStack(app, "leadership-pacer", { env: { account, region }, clusterAccess: access });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
  return { app, stack };
}
