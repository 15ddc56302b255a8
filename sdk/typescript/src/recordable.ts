// Whether the ledger can record a tool's result, and what runTool records when it cannot
// (as Python's oncelog.producer.recordable, docs/spec.md section 5): the tool ran, so the
// step is recorded as failed for good with code result_unrecordable, the reason and a
// digest, and a retry never runs the tool again.
import { inspect } from "node:util";

import { ResultUnrecordableError } from "./errors.js";
import { type Json, canonicalJson, sha256Hex } from "./identity.js";

/** The largest params or result the ledger records: 1 MiB of canonical JSON. */
export const MAX_JSON_BYTES = 1024 * 1024;
/** How a recorded result_unrecordable failure's text begins. */
export const UNRECORDABLE_PREFIX = "result_unrecordable: ";
const MAX_REASON_CHARS = 1000;

/** Why a result cannot be recorded, and the digest of what could be read of it: its
 * canonical JSON when it has one (it is only too large), else `util.inspect` of it. */
export interface Unrecordable {
  reason: string;
  typeName: string;
  digest: string;
  digestOf: "canonical JSON" | "inspect";
}

/** A value as JSON data, as `JSON.stringify` writes it (a Date becomes its ISO string, an
 * object with `toJSON` what that returns): a ready `resultEncoder`. */
export function jsonable(value: unknown): Json {
  const text = JSON.stringify(value);
  return text === undefined ? null : (JSON.parse(text) as Json);
}

/** Why `value` cannot be recorded as a result, or null when it can. */
export function unrecordable(value: unknown): Unrecordable | null {
  let text: string;
  try {
    text = canonicalJson(value);
  } catch (error) {
    return refusal(value, error instanceof Error ? error.message : String(error));
  }
  const size = Buffer.byteLength(text, "utf8");
  if (size <= MAX_JSON_BYTES) return null;
  return refusal(value, `result is ${size} bytes of canonical JSON, at most ${MAX_JSON_BYTES}`);
}

/** `value` refused for `reason`, with the digest of what could be read of it. */
export function refusal(value: unknown, reason: string): Unrecordable {
  const typeName =
    value === null ? "null" : typeof value === "object" ? (value.constructor?.name ?? "Object") : typeof value;
  const why = { reason: reason.slice(0, MAX_REASON_CHARS), typeName };
  try {
    return { ...why, digest: sha256Hex(canonicalJson(value)), digestOf: "canonical JSON" };
  } catch {
    const all = { depth: Infinity, maxArrayLength: Infinity, maxStringLength: Infinity };
    return { ...why, digest: sha256Hex(inspect(value, all)), digestOf: "inspect" };
  }
}

/** The failure's text on the log: the stable code first. */
export function recordedText(u: Unrecordable): string {
  return (
    `${UNRECORDABLE_PREFIX}${u.reason} (the tool ran; ${u.typeName} result not recorded, ` +
    `sha256 of its ${u.digestOf}: ${u.digest})`
  );
}

/** The caller's error: the effect ran, and what was recorded (`notRecorded`: why the
 * failure could not be recorded either, or null once it was). */
export function unrecordableError(
  executionId: string,
  u: Unrecordable,
  notRecorded: string | null,
): ResultUnrecordableError {
  const outcome =
    notRecorded === null
      ? "recorded the operation as failed for good with code result_unrecordable and this digest: " +
        "a retry answers this error and never runs the tool again"
      : `and recording that failed too (${notRecorded}): the step stays claimed until its lease ` +
        "lapses, and the next claim reconciles with this attempt";
  return new ResultUnrecordableError(
    `execution ${executionId}: the tool ran (its effect happened) but its result cannot be ` +
      `recorded: ${u.reason}. The ledger ${outcome} (sha256 of its ${u.digestOf}: ${u.digest}). ` +
      "Make the result JSON, e.g. with resultEncoder: jsonable (Dates), and keep it under 1 MiB " +
      "(store a large one elsewhere and return its reference)",
    "result_unrecordable",
    409,
  );
}
