/**
 * How each Lambda is bundled: one ESM file per handler, minified, with the AWS SDK inside (a pinned,
 * tree-shaken version rather than the runtime's). The stack and the size benchmark both use this.
 */
export const BUNDLE = {
  format: "esm" as const,
  target: "node20",
  minify: true,
  sourcemap: true,
  mainFields: ["module", "main"],
  /** Some dependencies still call require(); an ESM bundle needs it defined. */
  banner:
    "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
  /**
   * The Kafka client's WebAssembly (CRC32C, compression) is read from a file beside its module, which a
   * bundle does not have: its bundled build carries the module inline.
   */
  alias: { "@platformatic/wasm-utils": "@platformatic/wasm-utils/bundled" } as Record<string, string>,
};

export const LAMBDA_HANDLERS = {
  Api: "lambda-http.ts",
  Tick: "lambda-tick.ts",
  Worker: "lambda-worker.ts",
} as const;

/**
 * Builds one handler's bundle with the options above into `outfile`, as the stack's bundling does
 * (the stack passes the same options through NodejsFunction's bundling props).
 */
export async function buildLambdaBundle(file: string, outfile: string): Promise<void> {
  const { build } = await import("esbuild");
  await build({
    entryPoints: [`functions/handlers/${file}`],
    bundle: true,
    platform: "node",
    outfile,
    format: BUNDLE.format,
    target: BUNDLE.target,
    minify: BUNDLE.minify,
    sourcemap: BUNDLE.sourcemap,
    mainFields: BUNDLE.mainFields,
    banner: { js: BUNDLE.banner },
    alias: BUNDLE.alias,
    logLevel: "warning",
  });
}
