import { createGunzip } from "node:zlib";
import { type ProblemDetails, problem } from "../../schemas/problems.ts";

export type BodyResult = { ok: true; value: unknown; bytes: Buffer } | { ok: false; problem: ProblemDetails };
export type BytesResult = { ok: true; bytes: Buffer } | { ok: false; problem: ProblemDetails };

/**
 * A gzip body may inflate to the limit, and past 1 MiB to at most this many times the compressed
 * bytes inflated so far: a snapshot's JSON compresses 6–10:1 and the most regular one seen 26:1,
 * while a bomb of zeros or of repeated JSON inflates 300–1000:1. So a bomb costs the inflating of
 * its first 2 MiB, whatever its size.
 */
export const MAX_GZIP_RATIO = 100;
const RATIO_CHECKED_ABOVE = 1 << 20;
/** Inflated output per step on zlib's threads: 8 MiB in 8 hops, not 512 of the default 16 KiB. */
const INFLATE_CHUNK_BYTES = 1 << 20;

const bodyTooLarge = (maxBytes: number) =>
  problem("payload-too-large", `The body is larger than ${maxBytes} bytes`);

const JSON_MEDIA_TYPE = /^application\/([a-z0-9.+-]*\+)?json\s*(;|$)/i;

/**
 * A request body as it arrives: a web stream, or Node's own request stream where the server is
 * Node's (no web-stream layer over an 8 MiB body's hundreds of chunks).
 */
export type BodyStream = ReadableStream<Uint8Array> | AsyncIterable<Uint8Array> | null;

/** Reads at most `maxBytes` of a stream; null once it goes past. */
export async function readLimited(stream: BodyStream, maxBytes: number): Promise<Buffer | null> {
  if (stream === null) return Buffer.alloc(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of stream as AsyncIterable<Uint8Array>) {
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
export async function readJsonBody(
  request: Request,
  maxBytes: number,
  stream: BodyStream = request.body,
): Promise<BodyResult> {
  const body = await readBodyBytes(request, maxBytes, stream);
  if (!body.ok) return body;
  const parsed = parseJsonBytes(body.bytes);
  return parsed.ok ? { ok: true, value: parsed.value, bytes: body.bytes } : parsed;
}

/**
 * The body's bytes, unzipped (off the event loop) and within the limit; not yet parsed. The headers
 * come from `request`, the bytes from `stream`.
 */
export async function readBodyBytes(
  request: Request,
  maxBytes: number,
  stream: BodyStream = request.body,
): Promise<BytesResult> {
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
  const tooLarge = bodyTooLarge(maxBytes);
  if (Number(request.headers.get("content-length") ?? 0) > maxBytes) return { ok: false, problem: tooLarge };

  const bytes =
    encoding === "gzip"
      ? await readGzipLimited(stream, maxBytes)
      : ((await readLimited(stream, maxBytes)) ?? tooLarge);
  if (!Buffer.isBuffer(bytes)) return { ok: false, problem: bytes };
  if (bytes.length === 0)
    return { ok: false, problem: problem("invalid-json", "The body is empty; a JSON object is required") };
  return { ok: true, bytes };
}

/**
 * A gzip body, read within `maxBytes` as it came, then inflated in 1 MiB steps on zlib's threads.
 * After each step the inflated size is held to `maxBytes` and, past 1 MiB, to `MAX_GZIP_RATIO`
 * times the compressed bytes zlib has consumed: a bomb is stopped at its second step.
 */
async function readGzipLimited(stream: BodyStream, maxBytes: number): Promise<Buffer | ProblemDetails> {
  const tooLarge = bodyTooLarge(maxBytes);
  const compressed = await readLimited(stream, maxBytes);
  if (compressed === null) return tooLarge;
  const inflating = createGunzip({ chunkSize: INFLATE_CHUNK_BYTES });
  const chunks: Buffer[] = [];
  let size = 0;
  return new Promise((resolve) => {
    const refuse = (refusal: ProblemDetails) => {
      inflating.destroy();
      resolve(refusal);
    };
    inflating.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) return refuse(tooLarge);
      if (size > RATIO_CHECKED_ABOVE && size > MAX_GZIP_RATIO * inflating.bytesWritten) {
        return refuse(
          problem(
            "payload-too-large",
            `The gzip body inflates more than ${MAX_GZIP_RATIO} times its size; send it less compressed or uncompressed`,
          ),
        );
      }
      chunks.push(chunk);
    });
    inflating.on("end", () => resolve(Buffer.concat(chunks, size)));
    inflating.on("error", () => resolve(problem("invalid-json", "The body is not valid gzip")));
    inflating.end(compressed);
  });
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
