import { hash, verify } from "@node-rs/argon2";
import { describe, expect, it } from "vitest";
import { DUMMY_HASH } from "../src/domain/accounts/users.ts";

const params = (encoded: string) => encoded.split("$").slice(1, 4).join("$");

describe("accounts: the hash a login for nobody is checked against", () => {
  it("has the algorithm and parameters of every new password hash, so it takes as long to check", async () => {
    expect(params(DUMMY_HASH)).toBe(params(await hash("any password at all")));
    expect(await verify(DUMMY_HASH, "brickyard-dummy-password")).toBe(true);
  });
});
