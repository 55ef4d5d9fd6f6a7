import { App, type AppProps, Validations } from "aws-cdk-lib";
import { AwsSolutionsChecks } from "cdk-nag";
import { PacerStack } from "./stack.ts";

/** The CDK app with the cdk-nag AwsSolutions checks as a validation plugin: a finding fails synthesis. */
export function createPacerApp(props: AppProps = {}): { app: App; stack: PacerStack } {
  const app = new App(props);
  const account = app.node.tryGetContext("account") ?? process.env.CDK_DEFAULT_ACCOUNT ?? "000000000000";
  const region = app.node.tryGetContext("region") ?? process.env.CDK_DEFAULT_REGION ?? "us-east-1";
  const stack = new PacerStack(app, "leadership-pacer", { env: { account, region } });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
  return { app, stack };
}
