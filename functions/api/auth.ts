import { readFileSync } from "node:fs";

/**
 * Optional bearer-token auth for the local server: each token may act on the clusters whose ids match
 * one of its globs (`*` any run of characters, `?` one). The pure endpoint needs any valid token.
 * Writes that change every cluster (the fleet config) need a fleet-wide token: one whose globs
 * include `*` (every cluster) or the scope `@fleet` (which matches no cluster id).
 */
export const FLEET_SCOPE = "@fleet";

export interface TokenScope {
  patterns: RegExp[];
  fleet: boolean;
}

export class TokenAuth {
  private readonly tokens: Map<string, TokenScope>;

  constructor(tokens: Record<string, string[]>) {
    this.tokens = new Map(
      Object.entries(tokens).map(([token, globs]) => [
        token,
        {
          patterns: globs.filter((g) => g !== FLEET_SCOPE).map(globToRegExp),
          fleet: globs.includes("*") || globs.includes(FLEET_SCOPE),
        },
      ]),
    );
  }

  /** `PACER_TOKENS` = "token=glob,glob;token2=glob", or `PACER_TOKENS_FILE` = a JSON { token: [globs] }. */
  static fromEnvironment(env: NodeJS.ProcessEnv): TokenAuth | undefined {
    if (env.PACER_TOKENS_FILE) return new TokenAuth(JSON.parse(readFileSync(env.PACER_TOKENS_FILE, "utf8")));
    if (!env.PACER_TOKENS) return undefined;
    const tokens: Record<string, string[]> = {};
    for (const entry of env.PACER_TOKENS.split(";")) {
      const [token, globs] = entry.split("=");
      if (token?.trim())
        tokens[token.trim()] = (globs ?? "")
          .split(",")
          .map((g) => g.trim())
          .filter(Boolean);
    }
    return new TokenAuth(tokens);
  }

  /** The token's scope, or undefined for a missing or unknown token. */
  scopeOf(authorization: string | undefined): TokenScope | undefined {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "");
    return match ? this.tokens.get(match[1] as string) : undefined;
  }
}

export function mayAccess(patterns: RegExp[], clusterId: string): boolean {
  return patterns.some((pattern) => pattern.test(clusterId));
}

function globToRegExp(glob: string): RegExp {
  const source = glob
    .replace(/[.+^${}()|[\]\\]/g, "\\$&")
    .replaceAll("*", ".*")
    .replaceAll("?", ".");
  return new RegExp(`^${source}$`);
}
