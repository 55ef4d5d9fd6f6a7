import { fileURLToPath } from "node:url";
import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps, Token, Validations } from "aws-cdk-lib";
import {
  Alarm,
  AlarmStatusWidget,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  type IMetric,
  MathExpression,
  Metric,
  TreatMissingData,
} from "aws-cdk-lib/aws-cloudwatch";
import { AttributeType, BillingMode, ProjectionType, Table, TableEncryption } from "aws-cdk-lib/aws-dynamodb";
import { SecurityGroup, Subnet, Vpc } from "aws-cdk-lib/aws-ec2";
import { EventBus } from "aws-cdk-lib/aws-events";
import { Effect, PolicyStatement } from "aws-cdk-lib/aws-iam";
import {
  Architecture,
  type CfnFunction,
  FunctionUrlAuthType,
  type IFunction,
  Runtime,
} from "aws-cdk-lib/aws-lambda";
import { SqsEventSource } from "aws-cdk-lib/aws-lambda-event-sources";
import { NodejsFunction, OutputFormat } from "aws-cdk-lib/aws-lambda-nodejs";
import { LogGroup, RetentionDays } from "aws-cdk-lib/aws-logs";
import {
  ContextAttribute,
  Schedule,
  ScheduleExpression,
  ScheduleTargetInput,
} from "aws-cdk-lib/aws-scheduler";
import { LambdaInvoke } from "aws-cdk-lib/aws-scheduler-targets";
import { Queue, QueueEncryption } from "aws-cdk-lib/aws-sqs";
import type { Construct } from "constructs";
import { METRICS_NAMESPACE, SERVICE_NAME } from "../functions/handlers/lambda.ts";
import { TABLE } from "../functions/store/table.ts";
import { BUNDLE, LAMBDA_HANDLERS } from "./bundling.ts";

const handlerPath = (file: string) =>
  fileURLToPath(new URL(`../functions/handlers/${file}`, import.meta.url));
const projectRoot = fileURLToPath(new URL("..", import.meta.url));

/** The table actions the service uses, and no others. */
export const TABLE_ACTIONS = [
  "dynamodb:GetItem",
  "dynamodb:BatchGetItem",
  "dynamodb:PutItem",
  "dynamodb:UpdateItem",
  "dynamodb:DeleteItem",
  "dynamodb:Query",
  "dynamodb:BatchWriteItem",
  "dynamodb:DescribeTable",
];

/** Brokers the escape hatch let through, fleet-wide: the one series an alarm can watch. */
const fleetMaxWaitEscapes = (period: Duration) =>
  new Metric({
    namespace: METRICS_NAMESPACE,
    metricName: "FleetMaxWaitExpiredBrokerCount",
    dimensionsMap: { service: SERVICE_NAME },
    statistic: "Sum",
    period,
  });

/** Jobs that could not reach their cluster, fleet-wide: a cluster failing every tick trips the alarm. */
const fleetClustersUnreachable = (period: Duration) =>
  new Metric({
    namespace: METRICS_NAMESPACE,
    metricName: "FleetClusterUnreachable",
    dimensionsMap: { service: SERVICE_NAME },
    statistic: "Sum",
    period,
  });

/** The parts the alarms and the dashboard watch. */
interface StackParts {
  api: NodejsFunction;
  tick: NodejsFunction;
  worker: NodejsFunction;
  /** The schedule's dead letters: ticks that failed past their retries. */
  deadLetters: Queue;
  jobs: Queue;
  jobDeadLetters: Queue;
}

/** The cdk-nag AwsSolutions findings this stack accepts, and why. */
const ACCEPTED_FINDINGS: [string, string][] = [
  [
    "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
    "AWSLambdaBasicExecutionRole only lets each function write its own logs: AWS's least-privilege logging policy.",
  ],
  [
    "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole]",
    "With clusterAccess.network, the worker runs in the clusters' VPC: AWS's least-privilege policy for a function's network interfaces.",
  ],
  [
    "AwsSolutions-SQS3",
    "These queues are themselves dead-letter queues (of the schedule, of the tick jobs).",
  ],
];

/** Clusters fleeted with no agent: the worker reads each and elects itself (README, "Pace a fleet with no agent"). */
export interface ClusterAccessProps {
  /**
   * The clusters' VPC: the worker runs in it, in these subnets (default: its private subnets with
   * egress) with these security groups (default: one of its own; the brokers' security groups must
   * admit it). Omit for clusters reachable from outside any VPC. The worker also reaches DynamoDB,
   * SQS, Secrets Manager and EventBridge: give the subnets a NAT or VPC endpoints for them.
   */
  network?: { vpcId: string; subnetIds?: string[]; securityGroupIds?: string[] };
  /** ARNs of the Secrets Manager secrets connections name (SASL credentials, client keys); a trailing `*` is allowed. */
  secretArns?: string[];
  /** Or every secret with this tag: for a fleet that adds clusters without redeploying. */
  secretTag?: { key: string; value: string };
  /** MSK clusters reached with IAM (`sasl.mechanism` AWS_MSK_IAM), by cluster ARN. */
  mskClusterArns?: string[];
  /** Whether the worker sets catch-up throttles: the MSK dynamic-configuration actions are granted only then. */
  catchUpThrottles?: boolean;
  /** The most one cluster's job may take, in seconds, within the worker's 30 s timeout (default 20). */
  budgetSeconds?: number;
}

export interface PacerStackProps extends StackProps {
  /** How often the tick runs; EventBridge Scheduler's finest rate is one minute. */
  tickRate?: Duration;
  /** Worker functions running tick jobs at once (SQS event source's maximum concurrency, 2–1000). */
  workerConcurrency?: number;
  /** Clusters the worker reads and elects on itself. */
  clusterAccess?: ClusterAccessProps;
}

/** What the worker may do on an MSK cluster with IAM access control: read it, and elect (AlterCluster). */
export const MSK_ACTIONS = {
  cluster: ["kafka-cluster:Connect", "kafka-cluster:DescribeCluster", "kafka-cluster:AlterCluster"],
  topic: ["kafka-cluster:DescribeTopic"],
  /** Only with catch-up throttles: the replication quotas are broker and topic dynamic configs. */
  throttleCluster: [
    "kafka-cluster:DescribeClusterDynamicConfiguration",
    "kafka-cluster:AlterClusterDynamicConfiguration",
  ],
  throttleTopic: [
    "kafka-cluster:DescribeTopicDynamicConfiguration",
    "kafka-cluster:AlterTopicDynamicConfiguration",
  ],
};

/** An MSK cluster's ARN → the ARN pattern of its topics (`…:topic/<name>/<uuid>/*`). */
export function mskTopicsArnOf(clusterArn: string): string {
  if (Token.isUnresolved(clusterArn) || !/:cluster\/[^/]+\/[^/]+$/.test(clusterArn))
    throw new Error(`mskClusterArns: "${clusterArn}" is not an MSK cluster ARN (…:cluster/<name>/<uuid>)`);
  return `${clusterArn.replace(":cluster/", ":topic/")}/*`;
}

/** A tick job is delivered this many times before it goes to the dead-letter queue. */
export const TICK_JOB_RECEIVES = 3;
const WORKER_TIMEOUT = Duration.seconds(30);
const CLUSTER_BUDGET = Duration.seconds(20);

/**
 * leadership-pacer on AWS: one DynamoDB table, the HTTP API on Lambda behind an IAM-authenticated
 * Function URL, the tick on Lambda driven by EventBridge Scheduler, which queues one SQS job per due
 * cluster for a worker function that SQS scales out to `workerConcurrency`, and a bus for election
 * batches.
 */
export class PacerStack extends Stack {
  constructor(scope: Construct, id: string, props: PacerStackProps = {}) {
    super(scope, id, props);

    const table = new Table(this, "State", {
      partitionKey: { name: TABLE.partitionKey, type: AttributeType.STRING },
      sortKey: { name: TABLE.sortKey, type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      timeToLiveAttribute: TABLE.ttlAttribute,
      encryption: TableEncryption.AWS_MANAGED,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    table.addGlobalSecondaryIndex({
      indexName: TABLE.clustersIndex,
      partitionKey: { name: TABLE.clustersIndexPartitionKey, type: AttributeType.STRING },
      sortKey: { name: TABLE.clustersIndexSortKey, type: AttributeType.STRING },
      projectionType: ProjectionType.ALL,
    });

    const bus = new EventBus(this, "Decisions", { eventBusName: `${id}-decisions` });

    const environment = {
      PACER_TABLE: table.tableName,
      POWERTOOLS_SERVICE_NAME: SERVICE_NAME,
      POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
    };
    const api = this.pacerFunction("Api", LAMBDA_HANDLERS.Api, {
      environment,
      timeout: Duration.seconds(29),
      memorySize: 1024,
    });
    const tickRate = props.tickRate ?? Duration.minutes(1);
    // The tick only finds the due clusters; each is a job on this queue, run by the worker.
    const jobDeadLetters = new Queue(this, "TickJobDeadLetters", {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    const jobs = new Queue(this, "TickJobs", {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      // AWS's advice for a Lambda source: six times the function's timeout.
      visibilityTimeout: Duration.seconds(WORKER_TIMEOUT.toSeconds() * 6),
      // A job older than a few ticks is stale: later ticks have queued the cluster again.
      retentionPeriod: Duration.hours(1),
      deadLetterQueue: { queue: jobDeadLetters, maxReceiveCount: TICK_JOB_RECEIVES },
    });
    const tick = this.pacerFunction("Tick", LAMBDA_HANDLERS.Tick, {
      environment: {
        ...environment,
        PACER_TICK_QUEUE_URL: jobs.queueUrl,
        // A tick's window lasts until the next tick: ramps are followed within it, then handed over.
        PACER_TICK_WINDOW_SECONDS: String(tickRate.toSeconds()),
      },
      timeout: Duration.minutes(2),
      memorySize: 1024,
      // One tick at a time: a slow tick is never overtaken by the next one.
      reservedConcurrentExecutions: 1,
    });
    const access = props.clusterAccess ?? {};
    const budget = access.budgetSeconds ? Duration.seconds(access.budgetSeconds) : CLUSTER_BUDGET;
    if (budget.toMilliseconds() > WORKER_TIMEOUT.toMilliseconds() - 5_000)
      throw new Error(
        `clusterAccess.budget must leave 5 s of the worker's ${WORKER_TIMEOUT.toSeconds()} s timeout`,
      );
    const worker = this.pacerFunction("Worker", LAMBDA_HANDLERS.Worker, {
      environment: {
        ...environment,
        PACER_EVENT_BUS: bus.eventBusName,
        PACER_TICK_QUEUE_URL: jobs.queueUrl,
        PACER_CLUSTER_BUDGET_MS: String(budget.toMilliseconds()),
      },
      timeout: WORKER_TIMEOUT,
      memorySize: 1024,
      ...(access.network ? this.clusterNetwork(access.network) : {}),
    });
    worker.addEventSource(
      new SqsEventSource(jobs, {
        batchSize: 10,
        // Only the jobs that failed come back; the rest of the batch is done.
        reportBatchItemFailures: true,
        maxConcurrency: props.workerConcurrency ?? 50,
      }),
    );
    jobs.grantSendMessages(tick);
    // Ramps' next runs are delayed messages that the worker sends.
    jobs.grantSendMessages(worker);

    for (const fn of [api, tick, worker]) this.grantTable(fn, table.tableArn);
    worker.addToRolePolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: ["events:PutEvents"],
        resources: [bus.eventBusArn],
      }),
    );

    this.grantClusterAccess(worker, access);

    // Controllers call the API with SigV4-signed requests; nothing anonymous gets through.
    const url = api.addFunctionUrl({ authType: FunctionUrlAuthType.AWS_IAM });

    const deadLetters = new Queue(this, "TickDeadLetters", {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    new Schedule(this, "TickSchedule", {
      description: "Ticks leadership-pacer: paces every cluster whose ticking is on",
      schedule: ScheduleExpression.rate(tickRate),
      target: new LambdaInvoke(tick, {
        input: ScheduleTargetInput.fromObject({ scheduledAt: ContextAttribute.scheduledTime }),
        retryAttempts: 3,
        maxEventAge: Duration.minutes(5),
        deadLetterQueue: deadLetters,
      }),
    });

    const alarms = this.alarms({ api, tick, worker, deadLetters, jobs, jobDeadLetters });
    this.dashboard(id, { api, tick, worker, deadLetters, jobs, jobDeadLetters }, alarms);
    this.suppressions();
    // The schedule's role may invoke the tick function and its versions (`<arn>:*`): CDK's own grant.
    const tickLogicalId = this.getLogicalId(tick.node.defaultChild as CfnFunction);
    Validations.of(this).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${tickLogicalId}.Arn>:*]`,
      reason: "EventBridge Scheduler's role may invoke the tick function and its versions, nothing else.",
    });

    new CfnOutput(this, "ApiUrl", {
      value: url.url,
      description: "The API's Function URL (SigV4, service lambda)",
    });
    new CfnOutput(this, "TableName", { value: table.tableName });
    new CfnOutput(this, "EventBusName", { value: bus.eventBusName });
    new CfnOutput(this, "TickDeadLetterQueueUrl", { value: deadLetters.queueUrl });
    new CfnOutput(this, "TickJobQueueUrl", { value: jobs.queueUrl });
    new CfnOutput(this, "TickJobDeadLetterQueueUrl", { value: jobDeadLetters.queueUrl });
  }

  private pacerFunction(
    id: string,
    file: string,
    options: Pick<
      ConstructorParameters<typeof NodejsFunction>[2] & object,
      | "environment"
      | "timeout"
      | "memorySize"
      | "reservedConcurrentExecutions"
      | "vpc"
      | "vpcSubnets"
      | "securityGroups"
    >,
  ): NodejsFunction {
    const logGroup = new LogGroup(this, `${id}Logs`, {
      retention: RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    return new NodejsFunction(this, id, {
      entry: handlerPath(file),
      handler: "handler",
      // Node.js 20 reaches the end of creation on Lambda in 2027; the bundles target Node 20 syntax and run
      // unchanged on 24.
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      logGroup,
      projectRoot,
      depsLockFilePath: `${projectRoot}package-lock.json`,
      bundling: {
        // The local esbuild: no Docker engine is needed to build the bundles.
        forceDockerBundling: false,
        externalModules: [],
        format: OutputFormat.ESM,
        target: BUNDLE.target,
        minify: BUNDLE.minify,
        sourceMap: BUNDLE.sourcemap,
        mainFields: BUNDLE.mainFields,
        banner: BUNDLE.banner,
        esbuildArgs: Object.fromEntries(
          Object.entries(BUNDLE.alias).map(([from, to]) => [`--alias:${from}`, to]),
        ),
      },
      ...options,
      environment: { ...options.environment, NODE_OPTIONS: "--enable-source-maps" },
    });
  }

  /** The clusters' VPC, looked up by id (cdk.context.json keeps what the lookup found). */
  private clusterNetwork(network: NonNullable<ClusterAccessProps["network"]>) {
    const vpc = Vpc.fromLookup(this, "ClusterVpc", { vpcId: network.vpcId });
    return {
      vpc,
      vpcSubnets: network.subnetIds
        ? { subnets: network.subnetIds.map((id, i) => Subnet.fromSubnetId(this, `ClusterSubnet${i}`, id)) }
        : undefined,
      securityGroups: network.securityGroupIds?.map((id, i) =>
        SecurityGroup.fromSecurityGroupId(this, `ClusterSecurityGroup${i}`, id),
      ),
    };
  }

  /**
   * The worker reads the secrets connections name, only those (by ARN or by tag), and acts on the MSK
   * clusters given, only as far as pacing needs: connect, describe, elect, and the dynamic configs
   * only when it throttles catch-up.
   */
  private grantClusterAccess(worker: NodejsFunction, access: ClusterAccessProps) {
    if (access.secretArns?.length)
      worker.addToRolePolicy(
        new PolicyStatement({
          effect: Effect.ALLOW,
          actions: ["secretsmanager:GetSecretValue"],
          resources: access.secretArns,
        }),
      );
    if (access.secretTag) {
      worker.addToRolePolicy(
        new PolicyStatement({
          effect: Effect.ALLOW,
          actions: ["secretsmanager:GetSecretValue"],
          resources: ["*"],
          conditions: {
            StringEquals: { [`secretsmanager:ResourceTag/${access.secretTag.key}`]: access.secretTag.value },
          },
        }),
      );
      Validations.of(this).acknowledge({
        id: "AwsSolutions-IAM5[Resource::*]",
        reason: `GetSecretValue on secrets tagged ${access.secretTag.key}=${access.secretTag.value} only: the tag condition scopes it, so that secrets of new clusters need no redeploy.`,
      });
    }
    const clusters = access.mskClusterArns ?? [];
    if (clusters.length === 0) return;
    const topics = clusters.map(mskTopicsArnOf);
    for (const topicsArn of topics)
      Validations.of(this).acknowledge({
        id: `AwsSolutions-IAM5[Resource::${topicsArn}]`,
        reason:
          "The topics of an MSK cluster given in clusterAccess: pacing reads (and throttles) every topic of it.",
      });
    const throttles = access.catchUpThrottles === true;
    worker.addToRolePolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: [...MSK_ACTIONS.cluster, ...(throttles ? MSK_ACTIONS.throttleCluster : [])],
        resources: clusters,
      }),
    );
    worker.addToRolePolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: [...MSK_ACTIONS.topic, ...(throttles ? MSK_ACTIONS.throttleTopic : [])],
        resources: topics,
      }),
    );
  }

  private grantTable(fn: IFunction, tableArn: string) {
    fn.addToRolePolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: TABLE_ACTIONS,
        resources: [tableArn, `${tableArn}/index/${TABLE.clustersIndex}`],
      }),
    );
  }

  private alarms(parts: StackParts) {
    // Each alarm fires on the first occurrence in five minutes: any of these is worth a look.
    const onAny = (id: string, alarmDescription: string, metric: IMetric, threshold = 1) =>
      new Alarm(this, id, {
        alarmDescription,
        metric,
        threshold,
        evaluationPeriods: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
    const period = Duration.minutes(5);
    return [
      onAny("ApiErrorsAlarm", "Api Lambda errors: requests failing", parts.api.metricErrors({ period })),
      onAny("TickErrorsAlarm", "Tick Lambda errors: ticks failing", parts.tick.metricErrors({ period })),
      onAny(
        "WorkerErrorsAlarm",
        "Worker Lambda errors: tick jobs failing as a whole",
        parts.worker.metricErrors({ period }),
      ),
      onAny(
        "TickDeadLettersAlarm",
        "Ticks that failed past their retries: clusters are not being paced",
        parts.deadLetters.metricApproximateNumberOfMessagesVisible({ period }),
      ),
      onAny(
        "TickJobDeadLettersAlarm",
        "Tick jobs that failed past their receives: a cluster is not being paced",
        parts.jobDeadLetters.metricApproximateNumberOfMessagesVisible({ period }),
      ),
      onAny(
        "TickJobsBehindAlarm",
        "A tick job waited more than a minute: the workers do not keep up with the fleet",
        parts.jobs.metricApproximateAgeOfOldestMessage({ period, statistic: "Maximum" }),
        60,
      ),
      onAny(
        "ClustersUnreachableAlarm",
        "The worker could not reach clusters it paces (unreachable, TLS, authentication, authorization): see each cluster's last tick",
        fleetClustersUnreachable(period),
        3,
      ),
      onAny(
        "MaxWaitEscapesAlarm",
        "A broker was let through by the max-wait escape hatch: it never caught up",
        fleetMaxWaitEscapes(period),
      ),
    ];
  }

  /**
   * One page for an operator: per cluster the elections, what the gate and the throttle held back,
   * gated brokers and their out-of-sync partitions (a search over the ClusterId dimension, so new
   * clusters appear by themselves), the fleet's max-wait escapes, the functions and the alarms.
   */
  private dashboard(id: string, parts: StackParts, alarms: Alarm[]) {
    const { api, tick, worker, deadLetters, jobs, jobDeadLetters } = parts;
    const perCluster = (metricName: string, statistic: "Sum" | "Maximum"): IMetric =>
      new MathExpression({
        expression: `SEARCH('{${METRICS_NAMESPACE},ClusterId,service} MetricName="${metricName}"', '${statistic}', 60)`,
        label: "",
        period: Duration.minutes(1),
      });
    const graph = (title: string, left: IMetric[]) => new GraphWidget({ title, left, width: 12, height: 6 });
    new Dashboard(this, "Dashboard", {
      dashboardName: id,
      widgets: [
        [
          graph("Elections per cluster", [perCluster("Elections", "Sum")]),
          graph("Gated brokers per cluster", [perCluster("GatedBrokerCount", "Maximum")]),
        ],
        [
          graph("Out-of-sync preferred partitions per cluster", [
            perCluster("OutOfSyncPreferredPartitionCount", "Maximum"),
          ]),
          graph("Elections held back: by the gate, by the cap and throttle", [
            perCluster("ElectionsSkippedByGate", "Sum"),
            perCluster("ElectionsDeferredByThrottle", "Sum"),
          ]),
        ],
        [
          graph("Brokers let through by max-wait (fleet)", [fleetMaxWaitEscapes(Duration.minutes(1))]),
          new GraphWidget({
            title: "Functions and the dead-letter queues",
            left: [
              api.metricErrors({ label: "API errors" }),
              tick.metricErrors({ label: "Tick errors" }),
              worker.metricErrors({ label: "Worker errors" }),
              deadLetters.metricApproximateNumberOfMessagesVisible({ label: "Failed ticks" }),
              jobDeadLetters.metricApproximateNumberOfMessagesVisible({ label: "Failed tick jobs" }),
            ],
            right: [tick.metricDuration({ label: "Tick duration (max)", statistic: "Maximum" })],
            width: 12,
            height: 6,
          }),
        ],
        [
          graph("Tick jobs: sent, waiting, in flight", [
            jobs.metricNumberOfMessagesSent({ label: "Sent (runs and follow-ups)" }),
            jobs.metricApproximateNumberOfMessagesVisible({ label: "Waiting" }),
            jobs.metricApproximateNumberOfMessagesNotVisible({ label: "In flight" }),
          ]),
          new GraphWidget({
            title: "Workers: how many at once, and the oldest job's wait",
            left: [worker.metric("ConcurrentExecutions", { label: "Workers at once", statistic: "Maximum" })],
            right: [
              jobs.metricApproximateAgeOfOldestMessage({ label: "Oldest job (s)", statistic: "Maximum" }),
            ],
            width: 12,
            height: 6,
          }),
        ],
        [new AlarmStatusWidget({ title: "Alarms", alarms, width: 24, height: 3 })],
      ],
    });
  }

  /** cdk-nag AwsSolutions findings accepted on purpose, each with its reason. */
  private suppressions() {
    for (const [id, reason] of ACCEPTED_FINDINGS) Validations.of(this).acknowledge({ id, reason });
  }
}
