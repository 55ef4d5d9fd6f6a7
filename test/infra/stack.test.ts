import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Match, Template } from "aws-cdk-lib/assertions";
import { Queue } from "aws-cdk-lib/aws-sqs";
import { beforeAll, describe, expect, it } from "vitest";
import { createPacerApp } from "../../infra/pacer-app.ts";
import { TABLE_ACTIONS } from "../../infra/stack.ts";

/** The deployment as CloudFormation: resources, wiring, IAM, and the cdk-nag AwsSolutions checks. */

function synthesize(tamper?: (stack: ReturnType<typeof createPacerApp>["stack"]) => void) {
  const outdir = mkdtempSync(join(tmpdir(), "cdk-"));
  const { app, stack } = createPacerApp({ outdir });
  tamper?.(stack);
  const assembly = app.synth();
  return { template: Template.fromJSON(assembly.getStackByName(stack.stackName).template), outdir, stack };
}

let template: Template;
let outdir: string;
beforeAll(() => {
  ({ template, outdir } = synthesize());
});

type Statement = { Action: string | string[]; Resource: unknown; Effect: string };
function statementsOf(roleLogicalIdPrefix: string): Statement[] {
  const policies = template.findResources("AWS::IAM::Policy");
  return Object.values(policies)
    .filter((p) =>
      (p.Properties.Roles as { Ref: string }[]).some((r) => r.Ref.startsWith(roleLogicalIdPrefix)),
    )
    .flatMap((p) => p.Properties.PolicyDocument.Statement as Statement[]);
}
const actionsOf = (statements: Statement[]) => statements.flatMap((s) => [s.Action].flat()).sort();

describe("the stack", () => {
  it("keeps state in an on-demand table with point-in-time recovery, TTL and the clusters index, retained on deletion", () => {
    template.hasResource("AWS::DynamoDB::Table", {
      DeletionPolicy: "Retain",
      UpdateReplacePolicy: "Retain",
      Properties: Match.objectLike({
        BillingMode: "PAY_PER_REQUEST",
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        TimeToLiveSpecification: { AttributeName: "expiresAt", Enabled: true },
        KeySchema: [
          { AttributeName: "pk", KeyType: "HASH" },
          { AttributeName: "sk", KeyType: "RANGE" },
        ],
        GlobalSecondaryIndexes: [Match.objectLike({ IndexName: "clusters" })],
      }),
    });
  });

  it("runs its three functions on ARM64 Node.js with the table in their environment and 30-day logs", () => {
    const functions = template.findResources("AWS::Lambda::Function");
    const pacer = Object.values(functions).filter((f) => f.Properties.Handler === "index.handler");
    expect(pacer).toHaveLength(3);
    for (const fn of pacer) {
      expect(fn.Properties).toMatchObject({ Runtime: "nodejs24.x", Architectures: ["arm64"] });
      expect(fn.Properties.Environment.Variables.PACER_TABLE).toEqual({
        Ref: expect.stringMatching(/^State/),
      });
    }
    template.resourcePropertiesCountIs("AWS::Logs::LogGroup", { RetentionInDays: 30 }, 3);
  });

  it("puts the API behind an IAM-authenticated Function URL, never an anonymous one", () => {
    template.resourceCountIs("AWS::Lambda::Url", 1);
    template.hasResourceProperties("AWS::Lambda::Url", {
      AuthType: "AWS_IAM",
      TargetFunctionArn: { "Fn::GetAtt": [Match.stringLikeRegexp("^Api"), "Arn"] },
    });
    expect(JSON.stringify(template.toJSON())).not.toContain('"AuthType":"NONE"');
  });

  it("ticks every minute through EventBridge Scheduler, with retries, a dead-letter queue and the scheduled time", () => {
    template.hasResourceProperties("AWS::Scheduler::Schedule", {
      ScheduleExpression: "rate(1 minute)",
      State: "ENABLED",
      Target: Match.objectLike({
        Arn: { "Fn::GetAtt": [Match.stringLikeRegexp("^Tick"), "Arn"] },
        Input: JSON.stringify({ scheduledAt: "<aws.scheduler.scheduled-time>" }),
        RetryPolicy: { MaximumEventAgeInSeconds: 300, MaximumRetryAttempts: 3 },
        DeadLetterConfig: { Arn: { "Fn::GetAtt": [Match.stringLikeRegexp("^TickDeadLetters"), "Arn"] } },
      }),
    });
    template.hasResourceProperties("AWS::Lambda::Function", {
      Handler: "index.handler",
      ReservedConcurrentExecutions: 1,
      // A tick's window lasts until the next one: its jobs follow ramps within it.
      Environment: { Variables: Match.objectLike({ PACER_TICK_WINDOW_SECONDS: "60" }) },
    });
  });

  it("fans the tick out through SQS: a worker at bounded concurrency, failed jobs alone redelivered, then dead-lettered", () => {
    template.hasResourceProperties("AWS::Lambda::EventSourceMapping", {
      FunctionName: { Ref: Match.stringLikeRegexp("^Worker") },
      EventSourceArn: { "Fn::GetAtt": [Match.stringLikeRegexp("^TickJobs"), "Arn"] },
      BatchSize: 10,
      FunctionResponseTypes: ["ReportBatchItemFailures"],
      ScalingConfig: { MaximumConcurrency: 50 },
    });
    template.hasResourceProperties("AWS::SQS::Queue", {
      // Six times the worker's 30 s timeout, AWS's advice for a Lambda source.
      VisibilityTimeout: 180,
      SqsManagedSseEnabled: true,
      RedrivePolicy: {
        deadLetterTargetArn: { "Fn::GetAtt": [Match.stringLikeRegexp("^TickJobDeadLetters"), "Arn"] },
        maxReceiveCount: 3,
      },
    });
    const queueUrl = { Ref: expect.stringMatching(/^TickJobs/) };
    for (const name of ["Tick", "Worker"]) {
      const fn = Object.entries(template.findResources("AWS::Lambda::Function")).find(([id]) =>
        id.startsWith(name),
      );
      expect(fn?.[1].Properties.Environment.Variables.PACER_TICK_QUEUE_URL).toEqual(queueUrl);
      const send = statementsOf(`${name}ServiceRole`).filter((s) =>
        actionsOf([s]).includes("sqs:SendMessage"),
      );
      expect(send.map((s) => s.Resource)).toEqual([
        { "Fn::GetAtt": [expect.stringMatching(/^TickJobs/), "Arn"] },
      ]);
    }
    expect(actionsOf(statementsOf("ApiServiceRole")).filter((a) => a.startsWith("sqs:"))).toEqual([]);
  });

  it("grants each function only the table actions the service uses, on this table and its index", () => {
    for (const role of ["ApiServiceRole", "TickServiceRole", "WorkerServiceRole"]) {
      const table = statementsOf(role).filter((s) => actionsOf([s]).some((a) => a.startsWith("dynamodb:")));
      expect(table).toHaveLength(1);
      expect(actionsOf(table)).toEqual([...TABLE_ACTIONS].sort());
      expect(JSON.stringify(table[0]?.Resource)).toMatch(/State.*Arn.*\/index\/clusters/);
      expect(actionsOf(statementsOf(role)).filter((a) => a.includes("*"))).toEqual([]);
    }
  });

  it("lets only the worker put events, and only on the service's bus", () => {
    expect(actionsOf(statementsOf("ApiServiceRole"))).not.toContain("events:PutEvents");
    expect(actionsOf(statementsOf("TickServiceRole"))).not.toContain("events:PutEvents");
    const [put] = statementsOf("WorkerServiceRole").filter((s) =>
      actionsOf([s]).includes("events:PutEvents"),
    );
    expect(put?.Resource).toEqual({ "Fn::GetAtt": [expect.stringMatching(/^Decisions/), "Arn"] });
    template.resourceCountIs("AWS::Events::EventBus", 1);
  });

  it("alarms on handler errors, dead letters, workers falling behind, clusters unreachable and max-wait escapes", () => {
    template.resourceCountIs("AWS::CloudWatch::Alarm", 8);
    template.hasResourceProperties("AWS::CloudWatch::Alarm", {
      MetricName: "FleetClusterUnreachable",
      Namespace: "LeadershipPacer",
      Threshold: 3,
      Dimensions: [{ Name: "service", Value: "leadership-pacer" }],
    });
    template.hasResourceProperties("AWS::CloudWatch::Alarm", {
      MetricName: "ApproximateNumberOfMessagesVisible",
      Dimensions: [
        {
          Name: "QueueName",
          Value: { "Fn::GetAtt": [Match.stringLikeRegexp("^TickJobDeadLetters"), "QueueName"] },
        },
      ],
    });
    template.hasResourceProperties("AWS::CloudWatch::Alarm", {
      MetricName: "ApproximateAgeOfOldestMessage",
      Threshold: 60,
    });
    template.hasResourceProperties("AWS::CloudWatch::Alarm", {
      MetricName: "Errors",
      Namespace: "AWS/Lambda",
    });
    template.hasResourceProperties("AWS::CloudWatch::Alarm", {
      MetricName: "ApproximateNumberOfMessagesVisible",
    });
    template.hasResourceProperties("AWS::CloudWatch::Alarm", {
      MetricName: "FleetMaxWaitExpiredBrokerCount",
      Namespace: "LeadershipPacer",
      Dimensions: [{ Name: "service", Value: "leadership-pacer" }],
    });
  });

  it("has a dashboard of the run metrics per cluster, found by the ClusterId dimension, and the alarms", () => {
    const dashboards = Object.values(template.findResources("AWS::CloudWatch::Dashboard"));
    expect(dashboards).toHaveLength(1);
    // The body is a Fn::Join of JSON around resource references; those become placeholders here.
    const parts = dashboards[0]?.Properties.DashboardBody["Fn::Join"][1] as unknown[];
    const body = JSON.parse(parts.map((part) => (typeof part === "string" ? part : "REF")).join(""));
    const widgets = body.widgets as { type: string; properties: { metrics?: unknown[] } }[];
    const expressions = widgets
      .flatMap((widget) => widget.properties.metrics ?? [])
      .flatMap((metric) => (metric as { expression?: string }[]).map((m) => m.expression).filter(Boolean));
    for (const metric of [
      "Elections",
      "GatedBrokerCount",
      "OutOfSyncPreferredPartitionCount",
      "ElectionsSkippedByGate",
      "ElectionsDeferredByThrottle",
    ])
      expect(expressions).toContainEqual(
        expect.stringContaining(`ClusterId,service} MetricName="${metric}"`),
      );
    expect(JSON.stringify(widgets)).toContain("FleetMaxWaitExpiredBrokerCount");
    for (const queueMetric of [
      "ApproximateAgeOfOldestMessage",
      "NumberOfMessagesSent",
      "ConcurrentExecutions",
    ])
      expect(JSON.stringify(widgets)).toContain(queueMetric);
    expect(widgets.filter((widget) => widget.type === "alarm")).toHaveLength(1);
  });
});

describe("cdk-nag AwsSolutions", () => {
  it("finds nothing unacknowledged in the stack", () => {
    const report = JSON.parse(readFileSync(join(outdir, "validation-report.json"), "utf8"));
    expect(report.pluginReports).toEqual([]);
  });

  it("fails synthesis on a finding, so the check above can fail", () => {
    expect(() => synthesize((stack) => new Queue(stack, "PlainQueue"))).toThrow(/AwsSolutions-SQS4/);
  });
});

describe("clusters the worker reaches itself", () => {
  const CLUSTER =
    "arn:aws:kafka:us-east-1:000000000000:cluster/payments/0a1b2c3d-4e5f-6789-abcd-ef0123456789-4";
  const SECRET = "arn:aws:secretsmanager:us-east-1:000000000000:secret:kafka/pacer-AbCdEf";
  const synthesizeWith = (clusterAccess: Parameters<typeof createPacerApp>[1]) => {
    const dir = mkdtempSync(join(tmpdir(), "cdk-"));
    const { app, stack } = createPacerApp({ outdir: dir }, clusterAccess);
    const assembly = app.synth();
    const report = JSON.parse(readFileSync(join(dir, "validation-report.json"), "utf8"));
    return { template: Template.fromJSON(assembly.getStackByName(stack.stackName).template), report };
  };
  const workerStatements = (t: Template) => {
    const policies = t.findResources("AWS::IAM::Policy");
    return Object.values(policies)
      .filter((p) =>
        (p.Properties.Roles as { Ref: string }[]).some((r) => r.Ref.startsWith("WorkerServiceRole")),
      )
      .flatMap((p) => p.Properties.PolicyDocument.Statement as Statement[]);
  };

  it("without clusterAccess: no secret, no Kafka action, no VPC", () => {
    const text = JSON.stringify(statementsOf("WorkerServiceRole"));
    expect(text).not.toContain("secretsmanager:");
    expect(text).not.toContain("kafka-cluster:");
    const worker = Object.values(template.findResources("AWS::Lambda::Function")).find(
      (f) => f.Properties.Environment?.Variables?.PACER_CLUSTER_BUDGET_MS,
    );
    expect(worker?.Properties.VpcConfig).toBeUndefined();
    expect(worker?.Properties.Environment.Variables.PACER_CLUSTER_BUDGET_MS).toBe("20000");
  });

  it("scopes Secrets Manager to the secrets named and MSK IAM to the clusters given; runs the worker in their VPC; cdk-nag clean", () => {
    const { template: t, report } = synthesizeWith({
      network: {
        vpcId: "vpc-0123456789abcdef0",
        subnetIds: ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"],
        securityGroupIds: ["sg-0123456789abcdef0"],
      },
      secretArns: [SECRET],
      mskClusterArns: [CLUSTER],
    });
    expect(report.pluginReports).toEqual([]);
    const statements = workerStatements(t);
    const secrets = statements.filter((s) => [s.Action].flat().includes("secretsmanager:GetSecretValue"));
    expect(secrets.map((s) => s.Resource)).toEqual([SECRET]);
    const kafka = statements.filter((s) => [s.Action].flat().some((a) => a.startsWith("kafka-cluster:")));
    expect(kafka).toEqual([
      expect.objectContaining({
        Action: ["kafka-cluster:Connect", "kafka-cluster:DescribeCluster", "kafka-cluster:AlterCluster"],
        Resource: CLUSTER,
      }),
      expect.objectContaining({
        Action: "kafka-cluster:DescribeTopic",
        Resource: `${CLUSTER.replace(":cluster/", ":topic/")}/*`,
      }),
    ]);
    expect(JSON.stringify(kafka)).not.toContain("DynamicConfiguration");
    t.hasResourceProperties("AWS::Lambda::Function", {
      VpcConfig: {
        SubnetIds: ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"],
        SecurityGroupIds: ["sg-0123456789abcdef0"],
      },
      Environment: { Variables: Match.objectLike({ PACER_CLUSTER_BUDGET_MS: "20000" }) },
    });
    // Only the worker goes into the clusters' VPC.
    t.resourcePropertiesCountIs("AWS::Lambda::Function", { VpcConfig: Match.anyValue() }, 1);
  });

  it("grants the dynamic-config actions only when the worker throttles catch-up, and a tagged secret by its tag", () => {
    const { template: t, report } = synthesizeWith({
      mskClusterArns: [CLUSTER],
      catchUpThrottles: true,
      secretTag: { key: "leadership-pacer", value: "connection" },
    });
    const statements = workerStatements(t);
    const actions = actionsOf(statements.filter((s) => JSON.stringify(s.Action).includes("kafka-cluster:")));
    expect(actions).toEqual(
      expect.arrayContaining([
        "kafka-cluster:AlterClusterDynamicConfiguration",
        "kafka-cluster:AlterTopicDynamicConfiguration",
      ]),
    );
    const tagged = statements.find((s) => [s.Action].flat().includes("secretsmanager:GetSecretValue"));
    expect(tagged).toMatchObject({
      Resource: "*",
      Condition: { StringEquals: { "secretsmanager:ResourceTag/leadership-pacer": "connection" } },
    });
    // The tag condition is what scopes it: acknowledged by name, nothing else.
    expect(report.pluginReports).toEqual([]);
  });

  it("refuses a cluster ARN it cannot scope topics under, and a budget that leaves the worker no time", () => {
    expect(() =>
      synthesizeWith({ mskClusterArns: ["arn:aws:kafka:us-east-1:000000000000:cluster/payments"] }),
    ).toThrow(/not an MSK cluster ARN/);
    expect(() => synthesizeWith({ budgetSeconds: 28 })).toThrow(/budget must leave 5 s/);
  });
});
