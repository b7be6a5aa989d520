import { afterAll, beforeAll, expect, it } from "vitest";
import { DAY, ManualClock } from "../src/config/clock.ts";
import { Mailer, OUTBOX_RETENTION_MS } from "../src/domain/mail/mailer.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { openTestStore, type TestStore } from "./helpers/store.ts";

describeEachDialect("the outbox", (dialect) => {
  let store: TestStore;
  const clock = new ManualClock(Date.UTC(2026, 5, 1));
  beforeAll(async () => {
    store = await openTestStore(dialect);
  });
  afterAll(async () => store.dispose());

  // Its rows carry sign-in links and quoted feedback, and belong to nothing that would take them.
  it("keeps a message 30 days, then the sweep removes it and keeps the newer ones", async () => {
    const mailer = new Mailer(store.db, clock, { smtpUrl: null, baseUrl: "http://brickyard.test" });
    await mailer.send({ to: "a@example.test", subject: "old", text: "a link that has long expired" });
    clock.advance(OUTBOX_RETENTION_MS - DAY);
    await mailer.send({ to: "a@example.test", subject: "recent", text: "still wanted" });
    expect(await mailer.sweep()).toBe(0);
    clock.advance(DAY + 1);
    expect(await mailer.sweep()).toBe(1);
    expect((await mailer.to("a@example.test")).map((m) => m.subject)).toEqual(["recent"]);
  });
});
