import type { FastifyReply, FastifyRequest } from "fastify";
import { Type } from "typebox";
import type { Services } from "../../services.ts";
import type { AppRole } from "../../domain/access/access.ts";
import type { AppRecord } from "../../domain/apps/queries.ts";
import { UUID } from "../../domain/ids.ts";
import { apiError } from "../../errors/index.ts";
import { newNonce, sendPage } from "../../web/layout.ts";
import { signInPage } from "../../web/pages/common.ts";
import { viewerOf, type Viewer } from "../pages/viewer.ts";
import { appPage, tabPath, type AppTab } from "../../web/pages/console/app.ts";
import { can } from "../../domain/access/access.ts";

export const Params = Type.Object({ id: Type.String({ maxLength: 100 }) });
export const ItemParams = Type.Object({ id: Type.String({ maxLength: 100 }), item: Type.String({ maxLength: 200 }) });
export const Toggle = Type.Object({ enabled: Type.String({ enum: ["true", "false"] }) }, { additionalProperties: false });

export interface Opened {
  viewer: Viewer;
  app: AppRecord;
  role: AppRole;
}

/** What every console tab route needs: the gate, the page frame, the redirect back. */
export function consoleKit(ctx: Services) {
  /** The signed-in person and the app, when they have a relation to it; null after answering. */
  const open = async (request: FastifyRequest, id: string, reply: FastifyReply): Promise<Opened | null> => {
    const viewer = await viewerOf(ctx, request);
    if (viewer === null) {
      await sendPage(reply, signInPage({ returnTo: request.url.split("?")[0] ?? "/", intro: "Sign in to see this app." }), 401);
      return null;
    }
    // To anyone without a relation to it, the app's console does not exist.
    const record = UUID.test(id) ? await ctx.apps.get(id) : null;
    const role = record === null ? null : await ctx.apps.roleOf({ kind: "user", userId: viewer.userId }, record);
    if (record === null || role === null || role === "visitor" || role === "end-user") throw apiError("not_found", "no such app among yours");
    return { viewer, app: record, role };
  };
  /** A tab's page; one with a script gets a fresh nonce, and only that script may run. */
  const page = (reply: FastifyReply, o: Opened, tab: AppTab, body: Parameters<typeof appPage>[0]["body"], script?: string, status = 200) => {
    const ownerRights = can(o.role, "manage");
    if (script === undefined) return sendPage(reply, appPage({ handle: o.viewer.handle, app: o.app, tab, body, ownerRights }), status);
    const nonce = newNonce();
    return sendPage(reply, appPage({ handle: o.viewer.handle, app: o.app, tab, body, ownerRights, script: { nonce, source: script } }), status, { scriptNonce: nonce });
  };
  const back = (reply: FastifyReply, o: Opened, tab: AppTab) => reply.redirect(tabPath(o.app.id, tab), 303);
  const user = (o: Opened) => ({ kind: "user" as const, userId: o.viewer.userId });
  const ops = (o: Opened) => Object.keys(o.app.manifest.routes);
  const summary = (tab: string) => ({ tags: ["pages"], summary: `An app's console: ${tab} (HTML)` });
  return { open, page, back, user, ops, summary };
}
