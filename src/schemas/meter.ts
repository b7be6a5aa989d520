/**
 * The work budget of the validation running now. Validation is synchronous and Node runs one
 * at a time, so one meter serves them all: `metered` sets it, each schema node applied and each
 * pattern tested charges it, and the charge past the budget throws out of ajv's validator.
 */
export class BudgetExceeded extends Error {
  override name = "BudgetExceeded";
}

let left = Number.POSITIVE_INFINITY;

export function charge(units: number): void {
  left -= units;
  if (left < 0) throw new BudgetExceeded("validation ran past its work budget");
}

/** Runs `validate` with `budget` work units; throws BudgetExceeded when it needs more. */
export function metered<T>(budget: number, validate: () => T): T {
  const outer = left;
  left = budget;
  try {
    return validate();
  } finally {
    left = outer;
  }
}
