import { Type } from "typebox";
import type { Services } from "../../services.ts";
import { apiError } from "../../errors/index.ts";
import { requireUser } from "../../http/auth.ts";
import type { App } from "../../http/types.ts";
import { AppIdParams } from "../apps/schemas.ts";

/** Spec Limits: a starter prompt is at most 2000 characters (400 `invalid_input`). */
export const STARTER_PROMPT_MAX = 2000;

export default function putStarterPrompt(app: App, ctx: Services): void {
  app.put(
    "/app/:id/starter-prompt",
    {
      schema: {
        tags: ["web"],
        summary: "Set (or clear with null or empty) the text that leads the open-in-chat and copy-prompt actions; owner",
        security: [{ userToken: [] }],
        params: AppIdParams,
        // No maxLength here: the spec names `invalid_input` for a long prompt, not `invalid_request`.
        body: Type.Object({ starter_prompt: Type.Union([Type.String(), Type.Null()]) }, { additionalProperties: false }),
        response: { 200: Type.Object({ starter_prompt: Type.Union([Type.String(), Type.Null()]) }) },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      const text = request.body.starter_prompt;
      // Characters as people count them (code points), not UTF-16 units.
      if (text !== null && [...text].length > STARTER_PROMPT_MAX) {
        throw apiError("invalid_input", `starter_prompt is at most ${STARTER_PROMPT_MAX} characters`);
      }
      const updated = await ctx.apps.setSettings(request.params.id, user, { starterPrompt: text === "" ? null : text });
      return { starter_prompt: updated.starterPrompt };
    },
  );
}
