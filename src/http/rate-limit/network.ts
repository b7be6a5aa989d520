import ipaddr from "ipaddr.js";

/**
 * The share of what an instance holds open for clients (connections, event streams) that one
 * client network may hold, whoever it signs in as: it takes ten networks to fill the instance.
 */
export const NETWORK_SHARE = 10;

/**
 * The network a client address stands for when counting what one party may do: an IPv4 address
 * is one party, but an IPv6 client is usually handed a whole /64 (RFC 6177), billions of
 * addresses, so counting per IPv6 address counts nothing. IPv4-mapped IPv6 (`::ffff:a.b.c.d`,
 * what a dual-stack listener reports for IPv4 clients) is the IPv4 address. Anything that does
 * not parse is keyed as it is.
 */
export function networkOf(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.process(address);
  if (parsed.kind() === "ipv4") return parsed.toString();
  const parts = (parsed as ipaddr.IPv6).parts.slice(0, 4).map((part) => part.toString(16));
  return `${parts.join(":")}::/64`;
}
