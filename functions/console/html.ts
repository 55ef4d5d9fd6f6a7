/** HTML built from template literals: every interpolated value is escaped unless it is already HTML. */

export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

type Part = Html | string | number | boolean | null | undefined | Part[];

const ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};
export const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => ESCAPES[c] as string);

function render(part: Part): string {
  if (part === null || part === undefined || part === false) return "";
  if (part instanceof Html) return part.text;
  if (Array.isArray(part)) return part.map(render).join("");
  return escapeHtml(String(part));
}

export function html(strings: TemplateStringsArray, ...parts: Part[]): Html {
  let text = strings[0] ?? "";
  parts.forEach((part, i) => {
    text += render(part) + (strings[i + 1] ?? "");
  });
  return new Html(text);
}

/** Markup made here, not from input: an SVG chart, say. */
export const trusted = (text: string) => new Html(text);
