import { describe, expect, it } from "vitest";
import { networkOf } from "../src/http/rate-limit/network.ts";

describe("rate limits: the network an address stands for", () => {
  it("keys IPv6 by its /64, IPv4 (plain or mapped) by its address, and leaves what does not parse as it is", () => {
    expect(networkOf("2001:db8:1:2:aaaa::1")).toBe(networkOf("2001:0db8:0001:0002:ffff:ffff:ffff:ffff"));
    expect(networkOf("2001:db8:1:2::1")).toBe("2001:db8:1:2::/64");
    expect(networkOf("2001:db8:1:3::1")).not.toBe(networkOf("2001:db8:1:2::1"));
    expect(networkOf("::ffff:192.0.2.9")).toBe("192.0.2.9");
    expect(networkOf("192.0.2.9")).toBe("192.0.2.9");
    expect(networkOf("192.0.2.10")).not.toBe(networkOf("192.0.2.9"));
    expect(networkOf("::1")).toBe("0:0:0:0::/64");
    expect(networkOf("not an address")).toBe("not an address");
  });
});
