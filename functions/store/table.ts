import type { CreateTableCommandInput } from "@aws-sdk/client-dynamodb";

/**
 * The one table that holds every cluster (single-table design). The CDK stack and the embedded store
 * both build it from this definition.
 *
 *   pk = cluster#<id>  sk = cluster               state, version, config, last decision (one item per cluster)
 *   pk = cluster#<id>  sk = decision#<decisionId> a decision, gzip'd, expiring at `expiresAt`
 *   pk = cluster#<id>  sk = idempotency#<key>     the first answer to an Idempotency-Key, expiring
 *   pk = cluster#<id>  sk = snapshot#<id>#<n>     the stored snapshot, gzip'd, in pieces of 350 KB
 *   pk = cluster#<id>  sk = pieces#decision#<id>#<n>, pieces#answer#<id>#<n>
 *                                                 a decision or an answer too large for its own item
 *   pk = fleet         sk = config                fleet-wide configuration defaults
 *
 * The `clusters` index holds only cluster items (only they carry `kind`), so that the fleet listing
 * reads one row per cluster and never the decisions.
 */
export const TABLE = {
  partitionKey: "pk",
  sortKey: "sk",
  clustersIndex: "clusters",
  clustersIndexPartitionKey: "kind",
  clustersIndexSortKey: "clusterId",
  ttlAttribute: "expiresAt",
} as const;

export function createTableInput(tableName: string): CreateTableCommandInput {
  return {
    TableName: tableName,
    BillingMode: "PAY_PER_REQUEST",
    AttributeDefinitions: [
      { AttributeName: TABLE.partitionKey, AttributeType: "S" },
      { AttributeName: TABLE.sortKey, AttributeType: "S" },
      { AttributeName: TABLE.clustersIndexPartitionKey, AttributeType: "S" },
      { AttributeName: TABLE.clustersIndexSortKey, AttributeType: "S" },
    ],
    KeySchema: [
      { AttributeName: TABLE.partitionKey, KeyType: "HASH" },
      { AttributeName: TABLE.sortKey, KeyType: "RANGE" },
    ],
    GlobalSecondaryIndexes: [
      {
        IndexName: TABLE.clustersIndex,
        KeySchema: [
          { AttributeName: TABLE.clustersIndexPartitionKey, KeyType: "HASH" },
          { AttributeName: TABLE.clustersIndexSortKey, KeyType: "RANGE" },
        ],
        Projection: { ProjectionType: "ALL" },
      },
    ],
  };
}
