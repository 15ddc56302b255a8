// The documented ranges of the ledger's numbers and the one nesting limit, the same as the
// Python SDK's (oncelog/identity/validation.py; tests/crosslang/test_typescript_limits.py
// compares them), checked before anything is sent.
import { InvalidArgumentError } from "./errors.js";
import type { Json } from "./identity.js";

/** A lease: 1 s to 24 h. */
export const MIN_LEASE_S = 1;
export const MAX_LEASE_S = 24 * 3600;
/** A result's retention: 1 ms to 100 years. */
export const MIN_RETENTION_S = 0.001;
export const MAX_RETENTION_S = 100 * 365 * 24 * 3600;
/** A step number: 0 to 2**53 - 1, every JSON reader holds it exactly. */
export const MAX_STEP = Number.MAX_SAFE_INTEGER;
/** How deeply params and a result may nest objects and arrays (`{"a": [1]}` is 2). */
export const MAX_JSON_DEPTH = 100;
/** The longest wait of one HTTP attempt, in ms. */
export const MAX_ATTEMPT_TIMEOUT_MS = 300_000;
/** The most attempts of one call. */
export const MAX_ATTEMPTS = 100;

/** `value` if it is a finite number within [low, high], else an `InvalidArgumentError`. */
export function checkNumber(field: string, value: unknown, low: number, high: number): number {
  if (typeof value !== "number") {
    throw new InvalidArgumentError(`${field} must be a number, got ${typeof value}`);
  }
  if (!(Number.isFinite(value) && low <= value && value <= high)) {
    throw new InvalidArgumentError(`${field}=${value} is outside [${low}, ${high}]`);
  }
  return value;
}

/** `value` if it is an integer within [low, high], else an `InvalidArgumentError`. */
export function checkInteger(field: string, value: unknown, low: number, high: number): number {
  if (!Number.isInteger(value)) {
    throw new InvalidArgumentError(`${field} must be an integer, got ${String(value)}`);
  }
  return checkNumber(field, value, low, high);
}

/** Refuse a value nested more than `MAX_JSON_DEPTH` deep (walked level by level). */
export function checkDepth(field: string, value: Json | undefined): void {
  let level: unknown[] = typeof value === "object" && value !== null ? [value] : [];
  for (let depth = 1; level.length > 0; depth += 1) {
    if (depth > MAX_JSON_DEPTH) {
      throw new InvalidArgumentError(
        `${field} nests objects and arrays more than ${MAX_JSON_DEPTH} deep`,
      );
    }
    const below: unknown[] = [];
    for (const container of level) {
      for (const item of Object.values(container as object)) {
        if (typeof item === "object" && item !== null) below.push(item);
      }
    }
    level = below;
  }
}
