// oncelog's identity, re-derived in TypeScript with node:crypto only (spec section 2):
// RFC 8785 canonical JSON, the request hash, the operation id and the idempotency key.
// Checked against the same vectors as Python (tests/vectors/identity.json).
import { createHash } from "node:crypto";

import { InvalidArgumentError } from "./errors.js";

/** A JSON value as the ledger records it. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * RFC 8785 (JCS) canonical JSON: keys sorted by UTF-16 code units, no whitespace, numbers
 * as ECMAScript writes them (every number is a double here: 1e16 is written as Python writes
 * the float). NaN, Infinity and anything that is not JSON (undefined, functions, bigints,
 * class instances) are refused, as Python does.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value === "boolean" || typeof value === "string") {
    return JSON.stringify(value);
  }
  if (typeof value === "number") {
    if (!Number.isFinite(value)) {
      throw new InvalidArgumentError(`${value} has no canonical JSON form`);
    }
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(record[k])}`).join(",")}}`;
  }
  throw new InvalidArgumentError(`a ${typeof value} is not a JSON value`);
}

/** SHA-256 of a text's UTF-8 bytes, in hex. */
export function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

function uuidBytes(text: string): Buffer {
  return Buffer.from(text.replaceAll("-", ""), "hex");
}

function uuid5(namespace: Buffer, name: string): string {
  const b = createHash("sha1").update(namespace).update(name, "utf8").digest().subarray(0, 16);
  b[6] = ((b[6] ?? 0) & 0x0f) | 0x50; // version 5
  b[8] = ((b[8] ?? 0) & 0x3f) | 0x80; // RFC 4122 variant
  const h = b.toString("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

// uuid5(NAMESPACE_URL, "urn:oncelog:identity:v2"), derived here rather than copied.
const NAMESPACE_URL = uuidBytes("6ba7b811-9dad-11d1-80b4-00c04fd430c8");
const ONCELOG = uuidBytes(uuid5(NAMESPACE_URL, "urn:oncelog:identity:v2"));

function idOfPair(first: string, second: string): string {
  return uuid5(ONCELOG, sha256Hex(canonicalJson([first, second])));
}

/** The key name the SDKs use for a step number: `step-<N>`. */
export function stepKeyName(step: number): string {
  if (!Number.isSafeInteger(step) || step < 0) {
    throw new InvalidArgumentError(`step must be a non-negative integer, got ${step}`);
  }
  return `step-${step}`;
}

/** The operation id: UUIDv5 over the canonical pair (channel_id, key_name). */
export function operationId(channelId: string, keyName: string): string {
  return idOfPair(channelId, keyName);
}

/** SHA-256 over the canonical `{"tool", "params"}`, params restricted to `dedupFields`. */
export function requestHash(
  toolName: string,
  params: Record<string, unknown>,
  dedupFields: readonly string[] | null = null,
): string {
  let counted = params;
  if (dedupFields !== null) {
    counted = {};
    for (const name of dedupFields) {
      if (!(name in params)) {
        throw new InvalidArgumentError(`dedup_fields entry ${JSON.stringify(name)} is not in params`);
      }
      counted[name] = params[name];
    }
  }
  return sha256Hex(canonicalJson({ tool: toolName, params: counted }));
}

/** The idempotency key to pass downstream: UUIDv5 over (operation_id, request_hash). */
export function idempotencyKey(operation: string, hash: string): string {
  return idOfPair(operation, hash);
}
