import type { Users } from "../accounts/users.ts";
import type { Apps } from "../apps/apps.ts";
import { apiError, type Plan } from "../../errors/index.ts";
import type { Operations, Trigger } from "./operations.ts";

/**
 * Runs an op of an app's active code as the app itself (role `app`, no user): how routine ticks
 * and webhook deliveries call apps. They never count as the owner opening the app.
 */
export class AppRunner {
  constructor(
    private readonly apps: Apps,
    private readonly users: Users,
    private readonly operations: Operations,
  ) {}

  /** The op's `value`; every refusal or failure is a thrown ApiError, as for any op call. */
  async run(appId: string, op: string, input: unknown, trigger: Extract<Trigger, "routine" | "webhook">, headers: Record<string, string> = {}): Promise<unknown> {
    const app = await this.apps.mustFind(appId);
    const code = await this.apps.codeAt(app.id, app.revision);
    if (code === null) throw apiError("app_not_found", `no app ${app.id}`);
    return this.operations.call({
      app: { id: app.id, revision: app.revision, manifest: code.manifest, plan: await this.planOf(app.ownerUserId) },
      role: "app",
      op,
      input,
      trigger,
      userId: null,
      headers,
    });
  }

  /** The plan that sets an app's limits: its owner's; free while unclaimed. */
  async planOf(ownerUserId: string | null): Promise<Plan> {
    if (ownerUserId === null) return "free";
    return (await this.users.byId(ownerUserId))?.plan ?? "free";
  }
}
