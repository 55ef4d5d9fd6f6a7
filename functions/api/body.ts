import { promisify } from "node:util";
import { gunzip as gunzipCallback } from "node:zlib";
import { type ProblemDetails, problem } from "../../schemas/problems.ts";

export type BodyResult = { ok: true; value: unknown; bytes: Buffer } | { ok: false; problem: ProblemDetails };
export type BytesResult = { ok: true; bytes: Buffer } | { ok: false; problem: ProblemDetails };

const gunzip = promisify(gunzipCallback);

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

  let bytes = await readLimited(request.body, maxBytes);
  if (bytes === null) return { ok: false, problem: tooLarge };
  if (encoding === "gzip") {
    try {
      bytes = await gunzip(bytes, { maxOutputLength: maxBytes });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE")
        return { ok: false, problem: tooLarge };
      return { ok: false, problem: problem("invalid-json", "The body is not valid gzip") };
    }
  }
  if (bytes.length === 0)
    return { ok: false, problem: problem("invalid-json", "The body is empty; a JSON object is required") };
  return { ok: true, bytes };
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
