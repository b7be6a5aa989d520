import type { LiteralValue } from "./manifest.ts";

/** An app icon: one emoji drawn centred on a rounded square of colour `bg`. */
export interface Icon {
  emoji: string;
  bg: string;
}

const HEX_COLOUR = /^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$/;
// A grapheme counts as an emoji when it holds a pictograph, a flag's regional indicators or a keycap.
const EMOJI = /\p{Extended_Pictographic}|\p{Regional_Indicator}|\u20E3/u;
const segmenter = new Intl.Segmenter("en", { granularity: "grapheme" });

export const DEFAULT_ICON: Icon = { emoji: "🧱", bg: "#b5542f" };

/**
 * Normalises a manifest or request icon (DECISIONS §3): the emoji is cut to its first grapheme
 * without comment; an invalid emoji or bg, or any extra property, yields `icon: null` (the brick
 * is drawn) and a warning saying why. Never an error: a bad icon must not block a publish.
 */
export function normalizeIcon(raw: LiteralValue | undefined): { icon: Icon | null; warning: string | null } {
  if (raw === undefined || raw === null) return { icon: null, warning: null };
  const problem = iconProblem(raw);
  if (problem !== null) return { icon: null, warning: `manifest.icon ignored, the default brick is shown instead: ${problem}` };
  const value = raw as { emoji: string; bg: string };
  return { icon: { emoji: firstGrapheme(value.emoji), bg: value.bg }, warning: null };
}

/** Why `raw` is not a valid icon, or null when it is one. */
export function iconProblem(raw: unknown): string | null {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return "icon must be an object {emoji, bg}";
  const extra = Object.keys(raw).filter((k) => k !== "emoji" && k !== "bg");
  if (extra.length > 0) return `icon has properties other than emoji and bg: ${extra.join(", ")}`;
  const { emoji, bg } = raw as { emoji?: unknown; bg?: unknown };
  if (typeof emoji !== "string" || emoji.trim() === "") return "icon.emoji must be a non-empty string";
  if (!EMOJI.test(firstGrapheme(emoji))) return "icon.emoji must start with an emoji";
  if (typeof bg !== "string" || !HEX_COLOUR.test(bg)) return "icon.bg must be a hex colour #rgb, #rrggbb or #rrggbbaa";
  return null;
}

export function firstGrapheme(text: string): string {
  const first = segmenter.segment(text.trim())[Symbol.iterator]().next();
  return first.done === true ? "" : first.value.segment;
}

/** The composed rounded-square SVG served at GET /app/{id}/icon.svg. */
export function iconSvg(icon: Icon | null): string {
  const { emoji, bg } = icon ?? DEFAULT_ICON;
  // Both values passed validation (one grapheme of emoji, a hex colour), but escape anyway: this is markup.
  return [
    '<svg xmlns="http://www.w3.org/2000/svg" width="128" height="128" viewBox="0 0 128 128">',
    `<rect width="128" height="128" rx="28" ry="28" fill="${escapeXml(bg)}"/>`,
    `<text x="64" y="68" font-size="72" text-anchor="middle" dominant-baseline="middle"`,
    ` font-family="'Apple Color Emoji','Segoe UI Emoji','Noto Color Emoji',sans-serif">${escapeXml(emoji)}</text>`,
    "</svg>",
  ].join("");
}

function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
