import { describe, expect, it } from "vitest";
import { CONSOLE_CSS } from "../../functions/console/assets.ts";
import { PALETTE } from "../../functions/console/charts.ts";

/** WCAG 2 contrast of the console's colours: text and chart series at least 4.5:1 on their backgrounds. */

function luminance(hex: string): number {
  const [r, g, b] = [1, 3, 5].map((i) => {
    const v = Number.parseInt(hex.slice(i, i + 2), 16) / 255;
    return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
  }) as [number, number, number];
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}
const contrast = (a: string, b: string) => {
  const [light, dark] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (light + 0.05) / (dark + 0.05);
};

describe("the console's colours", () => {
  it("give every state badge text at least 4.5:1 on its background", () => {
    const badges = [
      ...CONSOLE_CSS.matchAll(/\.state-[^{]+\{ color: (#[0-9a-f]{6}); background: (#[0-9a-f]{6}); \}/g),
    ];
    expect(badges.length).toBeGreaterThanOrEqual(5);
    for (const [, color, background] of badges)
      expect(contrast(color!, background!)).toBeGreaterThanOrEqual(4.5);
  });

  it("give every chart series, the body text and the muted text at least 4.5:1 on white", () => {
    const variables = Object.fromEntries(
      [...CONSOLE_CSS.matchAll(/--(ink|muted|accent): (#[0-9a-f]{6})/g)].map((m) => [m[1], m[2]]),
    );
    expect(Object.keys(variables).sort()).toEqual(["accent", "ink", "muted"]);
    for (const colour of [...PALETTE, ...Object.values(variables)])
      expect(contrast(colour as string, "#ffffff")).toBeGreaterThanOrEqual(4.5);
  });
});
