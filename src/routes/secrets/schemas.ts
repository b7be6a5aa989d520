import { Type } from "typebox";

export const SecretName = Type.String({ minLength: 1, maxLength: 200, description: "^[A-Z][A-Z0-9_]{0,63}$" });
// The 8 KiB cap is counted in bytes by the domain (400 secret_too_large); this only bounds parsing.
export const SecretValue = Type.String({ maxLength: 64 * 1024 });
export const SecretParams = Type.Object({ id: Type.String(), name: SecretName });
