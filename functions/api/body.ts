import { gunzipSync } from "node:zlib";
import { type ProblemDetails, problem } from "../../schemas/problems.ts";

export type BodyResult = { ok: true; value: unknown; bytes: Buffer } | { ok: false; problem: ProblemDetails };

const JSON_MEDIA_TYPE = /^application\/([a-z0-9.+-]*\+)?json\s*(;|$)/i;

/** Reads at most `maxBytes` of a stream; null once it goes past. */
async function readLimited(
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
      bytes = gunzipSync(bytes, { maxOutputLength: maxBytes });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE")
        return { ok: false, problem: tooLarge };
      return { ok: false, problem: problem("invalid-json", "The body is not valid gzip") };
    }
  }
  if (bytes.length === 0)
    return { ok: false, problem: problem("invalid-json", "The body is empty; a JSON object is required") };
  try {
    return { ok: true, value: JSON.parse(bytes.toString("utf8")), bytes };
  } catch (error) {
    return {
      ok: false,
      problem: problem("invalid-json", `The body is not JSON: ${(error as Error).message}`),
    };
  }
}
