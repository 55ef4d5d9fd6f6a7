import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * Ports handed out by this process. The system may offer a port again as soon as the probe below has
 * closed it; a cluster that asks for seven before its JVMs bind them would then get one twice.
 */
const handedOut = new Set<number>();

/** A loopback port nothing listens on right now: for a server to take, or for a client to be refused. */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = createServer();
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as { port: number };
        server.close(() => resolve(port));
      });
    });
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
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
  options: { input?: string; env?: NodeJS.ProcessEnv; prefix?: string[] } = {},
): PacerProcess {
  // A prefix that execs its command (`ip netns exec …`) leaves the pacer at the child's pid: signals reach it.
  const [exe, ...rest] = [...(options.prefix ?? []), process.execPath, "bin/pacer.js", ...args];
  const child = spawn(exe as string, rest, {
    stdio: [options.input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    env: { ...process.env, ...options.env },
  });
  const output = collectOutput(child);
  if (options.input !== undefined) child.stdin?.end(options.input);
  return { child, ...output };
}

/** What a child process writes, as it arrives, and its exit code (1 when killed by a signal). */
export function collectOutput(child: ChildProcess) {
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk) => {
    stdout += chunk;
  });
  child.stderr?.on("data", (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise<number>((resolve) => child.once("exit", (code) => resolve(code ?? 1)));
  return { stdout: () => stdout, stderr: () => stderr, exited };
}

/**
 * Waits until a server started as `child` answers `url` (any HTTP answer counts), for at most 60 s;
 * throws if the child exits first.
 */
export async function waitUntilListening(name: string, url: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${name} exited with code ${child.exitCode}`);
    const answered = await fetch(url, { method: "POST" }).then(
      () => true,
      () => false,
    );
    if (answered) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${name} did not start within 60 s`);
}

/** `pacer serve` as its own process on a free port and a fresh embedded store. */
export async function startPacerServe(env: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), "pacer-serve-"));
  const serve = spawnPacer(["serve"], {
    env: { PORT: "0", PACER_DATA_DIR: join(dir, "data"), PACER_TICK_SECONDS: "0", ...env },
  });
  const { child } = serve;
  const url = await new Promise<string>((resolve, reject) => {
    const onData = () => {
      const match = /listening on (http:\/\/\S+)/.exec(serve.stdout());
      if (match) resolve(match[1] as string);
    };
    child.stdout?.on("data", onData);
    child.once("exit", (code) =>
      reject(new Error(`pacer serve exited (${code}):\n${serve.stdout()}${serve.stderr()}`)),
    );
  });
  return {
    url,
    /** The server's process id, for a bench that reads its CPU time. */
    pid: child.pid as number,
    output: () => `${serve.stdout()}${serve.stderr()}`,
    async stop() {
      if (child.exitCode === null) child.kill("SIGTERM");
      await serve.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
