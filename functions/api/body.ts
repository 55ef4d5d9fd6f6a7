import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import { type ProblemDetails, problem } from "../../schemas/problems.ts";

export type BodyResult = { ok: true; value: unknown; bytes: Buffer } | { ok: false; problem: ProblemDetails };
export type BytesResult = { ok: true; bytes: Buffer } | { ok: false; problem: ProblemDetails };

/**
 * A gzip body is inflated as it arrives and refused the moment it inflates past the limit, or past
 * this many times its compressed size once over `RATIO_CHECKED_ABOVE` bytes: a snapshot's JSON
 * compresses 6–10:1 and the most regular one seen 40:1, while a bomb of zeros or of repeated JSON
 * inflates 300–1000:1. So a bomb costs at most what inflating its first megabytes costs.
 */
export const MAX_GZIP_RATIO = 100;
const RATIO_CHECKED_ABOVE = 1 << 20;
/** Inflated output per step: large enough that 8 MiB takes 32 hops to zlib's threads, not 512. */
const INFLATE_CHUNK_BYTES = 256 << 10;

const JSON_MEDIA_TYPE = /^application\/([a-z0-9.+-]*\+)?json\s*(;|$)/i;

/** Reads at most `maxBytes` of a stream; null once it goes past. */
export async function readLimited(
  stream: ReadableStream<Uint8Array> | null,
  maxBytes: number,
): Promise<Buffer | null> {
  if (stream === null) return Buffer.alloc(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > maxBytes) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/**
 * A JSON request body, checked in the order a client can fix it: media type (415), size before and after
 * gzip (413, so a small gzip bomb is refused too), then syntax (400).
 */
export async function readJsonBody(request: Request, maxBytes: number): Promise<BodyResult> {
  const body = await readBodyBytes(request, maxBytes);
  if (!body.ok) return body;
  const parsed = parseJsonBytes(body.bytes);
  return parsed.ok ? { ok: true, value: parsed.value, bytes: body.bytes } : parsed;
}

/** The body's bytes, unzipped (off the event loop) and within the limit; not yet parsed. */
export async function readBodyBytes(request: Request, maxBytes: number): Promise<BytesResult> {
  const contentType = request.headers.get("content-type") ?? "";
  if (!JSON_MEDIA_TYPE.test(contentType)) {
    return {
      ok: false,
      problem: problem(
        "unsupported-media-type",
        `Content-Type must be application/json, not "${contentType || "(none)"}"`,
      ),
    };
  }
  const encoding = (request.headers.get("content-encoding") ?? "identity").trim().toLowerCase();
  if (encoding !== "identity" && encoding !== "gzip") {
    return {
      ok: false,
      problem: problem(
        "unsupported-media-type",
        `Content-Encoding "${encoding}" is not supported; use gzip or none`,
      ),
    };
  }
  const tooLarge = problem("payload-too-large", `The body is larger than ${maxBytes} bytes`);
  if (Number(request.headers.get("content-length") ?? 0) > maxBytes) return { ok: false, problem: tooLarge };

  const bytes =
    encoding === "gzip"
      ? await readGzipLimited(request.body, maxBytes)
      : ((await readLimited(request.body, maxBytes)) ?? tooLarge);
  if (!Buffer.isBuffer(bytes)) return { ok: false, problem: bytes };
  if (bytes.length === 0)
    return { ok: false, problem: problem("invalid-json", "The body is empty; a JSON object is required") };
  return { ok: true, bytes };
}

/** Thrown inside the inflating pipeline to stop it with the problem the client gets. */
class Refusal extends Error {
  constructor(readonly problem: ProblemDetails) {
    super(problem.detail);
  }
}

/**
 * A gzip body inflated chunk by chunk as it arrives, within `maxBytes` before and after inflating and
 * within `MAX_GZIP_RATIO`; the first chunk past a bound stops the reading and the inflating.
 */
async function readGzipLimited(
  stream: ReadableStream<Uint8Array> | null,
  maxBytes: number,
): Promise<Buffer | ProblemDetails> {
  if (stream === null) return Buffer.alloc(0);
  const tooLarge = () =>
    new Refusal(problem("payload-too-large", `The body is larger than ${maxBytes} bytes`));
  let compressed = 0;
  let inflated = 0;
  const chunks: Buffer[] = [];
  try {
    await pipeline(
      async function* countCompressed() {
        for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) {
          compressed += chunk.byteLength;
          if (compressed > maxBytes) throw tooLarge();
          yield chunk;
        }
      },
      createGunzip({ chunkSize: INFLATE_CHUNK_BYTES }),
      async function collectInflated(source: AsyncIterable<Buffer>) {
        for await (const chunk of source) {
          inflated += chunk.byteLength;
          if (inflated > maxBytes) throw tooLarge();
          if (inflated > RATIO_CHECKED_ABOVE && inflated > MAX_GZIP_RATIO * compressed) {
            throw new Refusal(
              problem(
                "payload-too-large",
                `The gzip body inflates more than ${MAX_GZIP_RATIO} times its size; send it less compressed or uncompressed`,
              ),
            );
          }
          chunks.push(chunk);
        }
      },
    );
  } catch (error) {
    if (error instanceof Refusal) return error.problem;
    return problem("invalid-json", "The body is not valid gzip");
  }
  return Buffer.concat(chunks);
}

export function parseJsonBytes(
  bytes: Uint8Array,
): { ok: true; value: unknown } | { ok: false; problem: ProblemDetails } {
  try {
    return {
      ok: true,
      value: JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8")),
    };
  } catch (error) {
    return {
      ok: false,
      problem: problem("invalid-json", `The body is not JSON: ${(error as Error).message}`),
    };
  }
}
