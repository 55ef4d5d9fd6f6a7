import { spawn } from "node:child_process";
import { connect, createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { inHost } from "./netns.ts";

/**
 * A bulk TCP transfer between two hosts of the bed, to check that a shaped link carries what it was
 * set to: a sink in one namespace counts bytes, a source in another writes as fast as TCP lets it.
 * The first second is left out of the rate (the token bucket's burst and TCP's slow start).
 */

const PORT = 5201;

/** Mbit/s carried from host `from` to host `to` (an address on the bed) over `seconds`. */
export async function measureTransfer(from: string, to: { name: string; address: string }, seconds = 5) {
  const run = (host: string, args: string[]) => {
    const child = spawn(...command(host, args), { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (chunk) => {
      out += chunk;
    });
    const exited = new Promise<number>((done) => child.once("exit", (code) => done(code ?? 1)));
    return { child, exited, out: () => out };
  };
  const sink = run(to.name, ["sink"]);
  await waitForLine(sink.child.stdout, "listening");
  const source = run(from, ["source", to.address, String(seconds)]);
  const [sinkCode, sourceCode] = await Promise.all([sink.exited, source.exited]);
  if (sinkCode !== 0 || sourceCode !== 0) throw new Error(`transfer ${from} → ${to.name} failed`);
  const lastLine = sink.out().trim().split("\n").pop() ?? "{}";
  return (JSON.parse(lastLine) as { mbit: number }).mbit;
}

function command(host: string, args: string[]): [string, string[]] {
  const [exe, ...prefix] = inHost(host);
  return [
    exe as string,
    [...prefix, process.execPath, "--import", "tsx", fileURLToPath(import.meta.url), ...args],
  ];
}

function waitForLine(stream: NodeJS.ReadableStream, text: string): Promise<void> {
  return new Promise((resolve) => {
    let seen = "";
    const onData = (chunk: Buffer) => {
      seen += chunk;
      if (seen.includes(text)) {
        stream.off("data", onData);
        resolve();
      }
    };
    stream.on("data", onData);
  });
}

function sink(): void {
  const server = createServer((socket) => {
    let bytes = 0;
    let firstAt = 0;
    let countedFrom = 0;
    let countedBytes = 0;
    socket.on("data", (chunk) => {
      const now = performance.now();
      if (firstAt === 0) firstAt = now;
      bytes += chunk.length;
      if (countedFrom === 0 && now - firstAt >= 1000) {
        countedFrom = now;
        countedBytes = bytes;
      }
    });
    socket.on("end", () => {
      const seconds = (performance.now() - countedFrom) / 1000;
      const mbit = ((bytes - countedBytes) * 8) / seconds / 1e6;
      process.stdout.write(`${JSON.stringify({ bytes, mbit: Math.round(mbit * 10) / 10 })}\n`);
      server.close();
    });
  });
  server.listen(PORT, "0.0.0.0", () => process.stdout.write("listening\n"));
}

function source(address: string, seconds: number): void {
  const chunk = Buffer.alloc(64 * 1024, 7);
  const socket = connect(PORT, address, () => {
    const until = performance.now() + seconds * 1000;
    const pump = () => {
      while (performance.now() < until) if (!socket.write(chunk)) return void socket.once("drain", pump);
      socket.end();
    };
    pump();
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [mode, address, seconds] = process.argv.slice(2);
  if (mode === "sink") sink();
  else if (mode === "source") source(address as string, Number(seconds));
}
