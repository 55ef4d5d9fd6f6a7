import { gzipSync } from "node:zlib";

/** Requests to a listening server, as a client sends them. */
export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: a test reads whatever JSON came back
  json: any;
}

export async function call(
  url: string,
  init: {
    method?: string;
    body?: unknown;
    headers?: Record<string, string>;
    raw?: string | Buffer;
    gzip?: boolean;
  } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...init.headers };
  let body: string | Buffer | undefined;
  if (init.raw !== undefined) body = init.raw;
  else if (init.body !== undefined) {
    body = JSON.stringify(init.body);
    headers["content-type"] ??= "application/json";
  }
  if (init.gzip && body !== undefined) {
    body = gzipSync(body);
    headers["content-encoding"] = "gzip";
  }
  const response = await fetch(url, {
    method: init.method ?? (body === undefined ? "GET" : "POST"),
    headers,
    body,
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: response.status, headers: response.headers, text, json };
}
