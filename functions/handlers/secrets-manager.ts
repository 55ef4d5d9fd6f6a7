import { GetSecretValueCommand, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { awsClientOptions } from "../aws.ts";
import type { SecretReader } from "../kafka/connection-options.ts";

/**
 * Secrets Manager behind the SecretReader: each secret read at most once per `ttlMs` (a warm Lambda
 * ticks every minute; a rotated secret is picked up within the TTL, or at once after a client using it
 * failed and was dropped). SECRETSMANAGER_ENDPOINT points
 * it at a Secrets Manager-protocol server (tests), with placeholder credentials.
 */
export class SecretsManagerReader implements SecretReader {
  private readonly cache = new Map<string, { value: string; readAtMs: number }>();

  constructor(
    private readonly client: SecretsManagerClient,
    private readonly ttlMs = 5 * 60_000,
    private readonly clock: () => number = Date.now,
  ) {}

  async read(arn: string): Promise<string> {
    const cached = this.cache.get(arn);
    if (cached && this.clock() - cached.readAtMs < this.ttlMs) return cached.value;
    const answer = await this.client.send(new GetSecretValueCommand({ SecretId: arn }));
    if (answer.SecretString === undefined) throw new Error("it holds binary data, not a string");
    this.cache.set(arn, { value: answer.SecretString, readAtMs: this.clock() });
    return answer.SecretString;
  }

  forget(arn: string): void {
    this.cache.delete(arn);
  }
}

export function secretsManagerReaderOf(env: { SECRETSMANAGER_ENDPOINT?: string }): SecretsManagerReader {
  const client = new SecretsManagerClient(awsClientOptions(env.SECRETSMANAGER_ENDPOINT));
  return new SecretsManagerReader(client);
}
