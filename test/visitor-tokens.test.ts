import { describe, expect, it } from "vitest";
import { ManualClock } from "../src/config/clock.ts";
import type { IssuedToken } from "../src/domain/tokens/tokens.ts";
import { VisitorTokens } from "../src/domain/app-page/visitor-tokens.ts";

// The sharing rule of anonymous visitors' render tokens, on a hand-driven clock (the store's part
// is tested over HTTP in test/hostile/visitor-tokens.test.ts).
describe("visitor tokens", () => {
  const setup = (windowMs = 1000, keptMax = 100) => {
    const clock = new ManualClock(0);
    const visitors = new VisitorTokens(clock, windowMs, keptMax);
    let minted = 0;
    const mint = (): Promise<IssuedToken> => {
      minted += 1;
      return Promise.resolve({ id: `id-${minted}`, token: `token-${minted}`, createdAt: clock.now(), expiresAt: null });
    };
    return { clock, visitors, mint, minted: () => minted };
  };

  it("hands one token to every render of an app and form in the window, then mints the next", async () => {
    const { clock, visitors, mint, minted } = setup();
    const first = await Promise.all([visitors.get("frame", "a", mint), visitors.get("frame", "a", mint)]);
    clock.advance(999);
    const late = await visitors.get("frame", "a", mint);
    expect([...first, late].map((issued) => issued.token)).toEqual(["token-1", "token-1", "token-1"]);
    expect((await visitors.get("query", "a", mint)).token).toBe("token-2");
    expect((await visitors.get("frame", "b", mint)).token).toBe("token-3");
    clock.advance(1);
    expect((await visitors.get("frame", "a", mint)).token).toBe("token-4");
    expect(minted()).toBe(4);
  });

  it("does not keep a failed mint: the next render tries again", async () => {
    const { visitors, mint } = setup();
    await expect(visitors.get("frame", "a", () => Promise.reject(new Error("store down")))).rejects.toThrow("store down");
    expect((await visitors.get("frame", "a", mint)).token).toBe("token-1");
  });

  it("forgets the oldest mint first once it keeps as many apps as it may", async () => {
    const { visitors, mint, minted } = setup(1000, 2);
    await visitors.get("frame", "a", mint);
    await visitors.get("frame", "b", mint);
    await visitors.get("frame", "c", mint);
    expect((await visitors.get("frame", "b", mint)).token).toBe("token-2");
    expect((await visitors.get("frame", "c", mint)).token).toBe("token-3");
    expect((await visitors.get("frame", "a", mint)).token).toBe("token-4");
    expect(minted()).toBe(4);
  });
});
