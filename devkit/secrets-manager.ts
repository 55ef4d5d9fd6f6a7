import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { CreateSecretCommand, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { awsClientOptions } from "../functions/aws.ts";
import { freePort, waitUntilListening } from "./processes.ts";

/**
 * A Secrets Manager-protocol server for tests: moto's server (PyPI), installed on first use into a
 * virtual environment under .moto/ (Python 3 with venv is needed; the install takes a minute once).
 * Never AWS itself.
 */

const MOTO = "moto[server]==5.2.6";
const VENV = resolve(".moto");

function ensureMoto(): string {
  const server = join(VENV, "bin", "moto_server");
  if (existsSync(server)) return server;
  execFileSync("python3", ["-m", "venv", VENV], { stdio: "inherit" });
  execFileSync(join(VENV, "bin", "pip"), ["install", "--quiet", "--disable-pip-version-check", MOTO], {
    stdio: "inherit",
  });
  return server;
}

export interface SecretsManagerServer {
  endpoint: string;
  /** A client of it, for what a test does to its secrets. */
  client: SecretsManagerClient;
  /** Creates a secret and returns its ARN. */
  createSecret(name: string, value: string): Promise<string>;
  stop(): Promise<void>;
}

export async function startSecretsManager(): Promise<SecretsManagerServer> {
  const server = ensureMoto();
  const port = await freePort();
  const child: ChildProcess = spawn(server, ["-H", "127.0.0.1", "-p", String(port)], {
    stdio: ["ignore", "ignore", "ignore"],
  });
  const endpoint = `http://127.0.0.1:${port}`;
  await waitUntilListening("moto (Secrets Manager)", endpoint, child);
  const client = new SecretsManagerClient(awsClientOptions(endpoint));
  return {
    endpoint,
    client,
    async createSecret(name, value) {
      return (await client.send(new CreateSecretCommand({ Name: name, SecretString: value }))).ARN as string;
    },
    async stop() {
      client.destroy();
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    },
  };
}
