import { defaultProvider } from "@aws-sdk/credential-provider-node";
import type { AwsCredentialIdentityProvider } from "@smithy/types";
import { generateAuthTokenFromCredentialsProvider } from "aws-msk-iam-sasl-signer-js";

/**
 * Amazon MSK's IAM access control (`sasl.mechanism` AWS_MSK_IAM): SASL OAUTHBEARER whose token is
 * AWS's signer's presigned `kafka-cluster:Connect` URL, base64url, valid for 15 minutes and signed with
 * the worker's own role, so no secret is registered. A token is made for each connection's
 * authentication; kept connections are made anew within its lifetime (cluster-connections.ts).
 */

/** Makes a token for a cluster in `region`. */
export type MskTokenSigner = (region: string) => Promise<string>;

export function mskTokenSigner(
  credentials: AwsCredentialIdentityProvider = defaultProvider(),
): MskTokenSigner {
  return async (region) =>
    (await generateAuthTokenFromCredentialsProvider({ region, awsCredentialsProvider: credentials })).token;
}

const MSK_HOST = /\.kafka(?:-serverless)?\.([a-z]{2}(?:-[a-z]+)+-\d)\.amazonaws\.com(?:\.cn)?$/;

/** The region of an MSK cluster, from its brokers' host names; else the function's own region. */
export function mskRegionOf(bootstrapServers: string[], fallback = process.env.AWS_REGION): string {
  for (const server of bootstrapServers) {
    const host = server.replace(/:\d+$/, "");
    const match = MSK_HOST.exec(host);
    if (match) return match[1] as string;
  }
  if (!fallback)
    throw new Error(
      "sasl.mechanism AWS_MSK_IAM: no region in the bootstrap servers' names and AWS_REGION is not set",
    );
  return fallback;
}
