import { describe, expect, it } from "vitest";
import { pinnedCdnOrigins } from "../src/domain/source/cdn-check.ts";
import { frameCsp, framePage } from "../src/web/frame.ts";

const manifest = { id: "x", displayName: "X", description: null, icon: null, capabilities: { imports: [], exports: [], origins: [] }, routes: {} };

describe("the frame document", () => {
  it("keeps the app's source inside its script element and the config out of reach of markup", () => {
    const page = framePage({
      base: "http://svc.test",
      appId: "a1",
      title: "<b>X</b>",
      manifest: manifest as never,
      ui: `document.body.append("</script><script>alert(1)</script>"); const s = "$& $' $\`";`,
      styles: "</style><script>alert(2)</script>",
      nonce: "N0NCE",
      token: "svc_render_abc",
      tokenExpiresAt: 1,
    });
    expect(page).toContain("<title>&lt;b&gt;X&lt;/b&gt;</title>");
    // The app's text cannot close its element early, so it cannot open one of its own.
    expect(page.match(/<script nonce="N0NCE">/g)).toHaveLength(2);
    expect(page).toContain(`"<\\/script><script>alert(1)<\\/script>"`);
    expect(page).toContain("<\\/style><script>alert(2)");
    // Inside <style> only `</style` ends the element; its `</script>` is inert text.
    expect(page.match(/<\/style>/g)).toHaveLength(1);
    expect(page).toContain(`const s = "$& $' $\`";`);
    expect(page).toContain('"token":"svc_render_abc"');
  });

  it("allows pinned CDN origins only, beside the nonce", () => {
    const ui = `load("https://cdn.jsdelivr.net/npm/chart.js@4.4.1/dist/chart.umd.min.js"); load("https://unpkg.com/@scope/pkg@1.0.0/x.js"); load("https://esm.sh/react"); load("https://evil.example/x.js")`;
    expect(pinnedCdnOrigins(ui)).toEqual(["https://cdn.jsdelivr.net", "https://unpkg.com"]);
    const csp = frameCsp("http://svc.test", "a1", "N", "svc_render_t", ui);
    expect(csp).toContain("script-src 'nonce-N' https://cdn.jsdelivr.net https://unpkg.com;");
    expect(csp).toContain("connect-src http://svc.test;");
    expect(csp).toContain("frame-ancestors http://svc.test;");
    // Opened as a page of its own, the frame is still sandboxed: an opaque origin, no cookies of ours.
    expect(csp).toContain("sandbox allow-scripts allow-forms allow-popups;");
    expect(csp).toContain("report-uri http://svc.test/app/a1/diag/report?t=svc_render_t");
    expect(frameCsp("http://svc.test", "a1", "N", "t")).toContain("script-src 'nonce-N';");
  });
});
