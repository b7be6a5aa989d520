import { afterAll, beforeAll, expect, it } from "vitest";
import { expectError, makeUser, manifestOf, moduleSource, type FixtureUser } from "./helpers/apps.ts";
import { describeEachDialect } from "./helpers/dialects.ts";
import { startServer, type TestServer } from "./helpers/server.ts";

/**
 * Routines and webhooks count against the plan of the app's owner, and were counted only when
 * made: moving apps into a team gathered there more than its plan allows (110 routines on a team
 * whose plan allows 100). A move now counts them on the destination's plan. The person is on
 * business here (25 of each an app) and their team on free (3 an app, 25 in all).
 */
describeEachDialect("transfer within the destination's plan caps", (dialect) => {
  let server: TestServer;
  let owner: FixtureUser;
  let slug: string;
  const ops = ["a", "b", "c", "d"];

  beforeAll(async () => {
    server = await startServer({ dialect });
    owner = await makeUser(server);
    await server.ctx.users.setPlan(owner.handle, "business");
    slug = `t-${owner.handle}`;
    expect((await server.client.post("/api/v1/teams", { slug }, { token: owner.token })).status).toBe(201);
    await server.ctx.users.setPlan(slug, "free");
  });
  afterAll(async () => server.close());

  async function appWith(manifestId: string, routines: number, webhooks: number): Promise<string> {
    const created = await server.client.post("/app", { module: moduleSource(manifestOf(manifestId, ops)) }, { token: owner.token });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id as string;
    for (const op of ops.slice(0, routines)) expect((await server.client.post(`/api/v1/apps/${id}/routines`, { op, interval: "hourly" }, { token: owner.token })).status).toBe(201);
    for (const op of ops.slice(0, webhooks)) expect((await server.client.post(`/api/v1/apps/${id}/webhooks`, { op }, { token: owner.token })).status).toBe(201);
    return id;
  }

  const transfer = (appId: string) => server.client.post(`/api/v1/apps/${appId}/transfer`, { team: slug }, { token: owner.token });
  const ownerOf = async (appId: string) => (await server.ctx.db.selectFrom("apps").select("owner_user_id").where("id", "=", appId).executeTakeFirstOrThrow()).owner_user_id;

  it("an app with more routines or webhooks than the destination's plan allows an app stays where it is, until some go", async () => {
    const routines = await appWith("many-routines", 4, 0);
    const refused = expectError(await transfer(routines), 429, "routine_limit_exceeded");
    expect(refused).toMatchObject({ plan: "free", limit: "routines_per_app", max: 3 });
    expect(refused.message).toContain("4 routines");
    expect(await ownerOf(routines)).toBe(owner.id);

    const webhooks = await appWith("many-webhooks", 0, 4);
    expect(expectError(await transfer(webhooks), 429, "webhook_limit_exceeded")).toMatchObject({ plan: "free", limit: "webhooks_per_app", max: 3 });
    expect(await ownerOf(webhooks)).toBe(owner.id);

    const listed = (await server.client.get(`/api/v1/apps/${routines}/routines`, { token: owner.token })).body.routines as { id: string }[];
    expect((await server.client.delete(`/api/v1/routines/${listed[0]?.id}`, { token: owner.token })).status).toBe(200);
    expect((await transfer(routines)).status).toBe(200);
    expect(await ownerOf(routines)).not.toBe(owner.id);
  });

  it("an app whose routines would take the destination past its plan's total stays where it is", async () => {
    // The team holds 3 from the case above; 7 more apps of 3 make 24, and one more would make 27 of 25.
    for (let i = 0; i < 7; i++) expect((await transfer(await appWith(`three-${i}`, 3, 0))).status).toBe(200);
    const last = await appWith("one-too-many", 3, 0);
    const refused = expectError(await transfer(last), 429, "routine_limit_exceeded");
    expect(refused).toMatchObject({ plan: "free", limit: "routines_per_owner", max: 25 });
    expect(refused.message).toContain("27 routines");
    expect(await ownerOf(last)).toBe(owner.id);
  });
});
