import { describe, expect, it } from "vitest";
import { normalizeUserCode } from "../src/domain/pairing/index.ts";
import { html, sameOriginPath, unsafeRaw } from "../src/web/html.ts";

describe("web: html templating", () => {
  it("escapes every interpolation unless it is SafeHtml", () => {
    const label = `<script>alert("x")</script> & 'y'`;
    expect(html`<p title="${label}">${label}</p>`.value).toBe(
      "<p title=\"&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;\">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;</p>",
    );
    const inner = html`<b>${"<i>"}</b>`;
    expect(html`<p>${inner}${unsafeRaw("<br>")}</p>`.value).toBe("<p><b>&lt;i&gt;</b><br></p>");
  });

  it("renders arrays item by item and nothing for null, undefined and false", () => {
    expect(html`<ul>${["<a>", html`<li>ok</li>`]}</ul>`.value).toBe("<ul>&lt;a&gt;<li>ok</li></ul>");
    expect(html`[${null}${undefined}${false}${0}]`.value).toBe("[0]");
  });

  it("keeps return paths on this site", () => {
    expect(sameOriginPath("/pair?code=SVC-ABCDEF", "/")).toBe("/pair?code=SVC-ABCDEF");
    // The last ones normalise to `//evil.example`: checked again after.
    for (const away of ["//evil.example", "/\\evil.example", "https://evil.example/pair", "pair", "", undefined, "/\t/evil.example", "/.//evil.example", "/%2e//evil.example", "/share/..//evil.example/x"]) {
      expect(sameOriginPath(away, "/fallback"), String(away)).toBe("/fallback");
    }
  });
});

describe("pairing: user codes as people type them", () => {
  it("ignores case, dashes and spaces, and accepts the code without its prefix", () => {
    for (const typed of ["SVC-ABC234", "svc-abc234", "svc abc 234", " SVCABC234 ", "abc234", "ABC-234", "s-v-c-a-b-c-2-3-4"]) {
      expect(normalizeUserCode(typed), typed).toBe("SVC-ABC234");
    }
  });

  it("refuses what cannot be a code", () => {
    for (const typed of ["", "SVC-ABC23", "SVC-ABC2345", "SVC-ABC230", "XYZ-ABC234", "SVC-ÀBC234", "SVC_ABC234"]) {
      expect(normalizeUserCode(typed), typed).toBeNull();
    }
  });
});
