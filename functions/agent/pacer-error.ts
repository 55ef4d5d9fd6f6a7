/** A service answer other than 2xx, as the agent sees it (kept apart from the client, which the worker does not carry). */
export class PacerError extends Error {
  constructor(
    readonly status: number,
    detail: string,
    /** The problem's type ("/problems/…"), when the service answered one. */
    readonly type?: string,
  ) {
    super(`pacer answered ${status}: ${detail}`);
  }

  /** The service paces this cluster itself (a connection is registered): an agent beside it must stop. */
  get clusterConnected(): boolean {
    return this.type === "/problems/cluster-connected";
  }
}
