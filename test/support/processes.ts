import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";

/** A loopback port nothing listens on right now: for a server to take, or for a client to be refused. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface PacerProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code once the process has ended. */
  exited: Promise<number>;
}

/** `pacer <args>` as its own process, as an operator runs it, its output collected. */
export function spawnPacer(
  args: string[],
  options: { input?: string; env?: NodeJS.ProcessEnv } = {},
): PacerProcess {
  const child = spawn(process.execPath, ["bin/pacer.js", ...args], {
    stdio: [options.input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    env: { ...process.env, ...options.env },
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk) => {
    stdout += chunk;
  });
  child.stderr?.on("data", (chunk) => {
    stderr += chunk;
  });
  if (options.input !== undefined) child.stdin?.end(options.input);
  const exited = new Promise<number>((resolve) => child.once("exit", (code) => resolve(code ?? 1)));
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}
