import { REF } from "../api/openapi.ts";

/** The web console's pages: HTML for people, listed so that the document names every route. */
export function consolePaths() {
  const page = (summary: string, more: Record<string, unknown> = {}) => ({
    summary,
    tags: ["console"],
    responses: {
      200: { description: "A page", content: { "text/html": { schema: { type: "string" } } } },
      401: { description: "Tokens are on and none was given: the sign-in page" },
      ...more,
    },
  });
  const cluster = [{ name: "clusterId", in: "path", required: true, schema: REF("ClusterId") }];
  const asset = (type: string) => ({
    get: {
      summary: "The console's own stylesheet or script",
      tags: ["console"],
      responses: { 200: { description: "The file", content: { [type]: { schema: { type: "string" } } } } },
    },
  });
  return {
    "/": { get: page("The fleet: every cluster's state, sortable, filterable, paged") },
    "/clusters/{clusterId}": {
      get: {
        ...page("A cluster: config and its sources, the gate, charts of recent runs, decisions"),
        parameters: cluster,
      },
    },
    "/clusters/{clusterId}/what-if": {
      get: { ...page("The what-if form"), parameters: cluster },
      post: {
        ...page("The stored snapshot run under the cluster's config and under the overrides, side by side", {
          400: { description: "The overrides are not valid: the form again, naming the problem" },
        }),
        parameters: cluster,
      },
    },
    "/console/login": { post: page("Signs in with a token (form field token); 303 to the fleet") },
    "/console/logout": { post: page("Signs out; 303 to the fleet") },
    "/console/console.css": asset("text/css"),
    "/console/console.js": asset("text/javascript"),
  };
}
