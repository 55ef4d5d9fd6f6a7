import { App, Validations } from "aws-cdk-lib";
import { AwsSolutionsChecks } from "cdk-nag";
import { PacerStack } from "./stack.ts";

/**
 * `npx cdk synth` / `npx cdk deploy`. The account and region come from `-c account=… -c region=…` or the
 * CLI's credentials; an explicit env lets synth run offline.
 */
const app = new App();
const account = app.node.tryGetContext("account") ?? process.env.CDK_DEFAULT_ACCOUNT ?? "000000000000";
const region = app.node.tryGetContext("region") ?? process.env.CDK_DEFAULT_REGION ?? "us-east-1";
new PacerStack(app, "leadership-pacer", { env: { account, region } });
Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
