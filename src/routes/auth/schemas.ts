import { Type } from "typebox";
import type { User } from "../../domain/accounts/users.ts";
import { iso } from "../../config/clock.ts";
import { Timestamp } from "../../http/schemas.ts";

export const UserView = Type.Object({
  id: Type.String({ format: "uuid" }),
  email: Type.String(),
  handle: Type.String(),
  plan: Type.String({ enum: ["free", "pro", "business", "enterprise"] }),
  createdAt: Timestamp,
  emailVerified: Type.Boolean({ description: "the account followed the verification link mailed to its address" }),
});

export function userView(user: User) {
  return { id: user.id, email: user.email, handle: user.handle, plan: user.plan, createdAt: iso(user.createdAt), emailVerified: user.emailVerified };
}
