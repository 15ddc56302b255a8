// Re-derives every vector of tests/vectors/identity.json in Node.js, with no dependencies:
// RFC 8785 (JCS) canonical JSON, SHA-256, and UUIDv5 in oncelog's identity v2 namespace.
//
//   node tests/crosslang/identity.mjs tests/vectors/identity.json
//
// Exits 0 and prints "ok <n> vectors" when every canonical form, request hash, operation
// id and idempotency key matches; otherwise prints each mismatch and exits 1.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";

// JCS: JSON.stringify already writes numbers (Number.prototype.toString) and strings as
// RFC 8785 wants; objects need their keys sorted by UTF-16 code units (the default sort).
function jcs(value) {
  if (value === null || typeof value === "boolean" || typeof value === "string") {
    return JSON.stringify(value);
  }
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new Error(`${value} has no canonical JSON form`);
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(jcs).join(",")}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${jcs(value[k])}`).join(",")}}`;
}

const sha256Hex = (text) => createHash("sha256").update(text, "utf8").digest("hex");

function uuidBytes(text) {
  return Buffer.from(text.replaceAll("-", ""), "hex");
}

function uuid5(namespace, name) {
  const digest = createHash("sha1").update(namespace).update(name, "utf8").digest();
  const b = digest.subarray(0, 16);
  b[6] = (b[6] & 0x0f) | 0x50; // version 5
  b[8] = (b[8] & 0x3f) | 0x80; // RFC 4122 variant
  const h = b.toString("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

// uuid5(NAMESPACE_URL, "urn:oncelog:identity:v2"), derived here rather than copied.
const NAMESPACE_URL = uuidBytes("6ba7b811-9dad-11d1-80b4-00c04fd430c8");
const ONCELOG = uuidBytes(uuid5(NAMESPACE_URL, "urn:oncelog:identity:v2"));

const idOfPair = (first, second) => uuid5(ONCELOG, sha256Hex(jcs([first, second])));

function requestHash(tool, params, dedupFields) {
  const counted = dedupFields === null
    ? params
    : Object.fromEntries(dedupFields.map((name) => [name, params[name]]));
  return sha256Hex(jcs({ tool, params: counted }));
}

function derive(input) {
  const rh = requestHash(input.tool_name, input.params, input.dedup_fields);
  const op = idOfPair(input.channel_id, input.key_name);
  return {
    canonical_params: jcs(input.params),
    request_hash: rh,
    operation_id: op,
    idempotency_key: idOfPair(op, rh),
  };
}

const vectors = JSON.parse(readFileSync(process.argv[2], "utf8"));
let failures = 0;
for (const vector of vectors) {
  for (const [field, value] of Object.entries(derive(vector.input))) {
    if (value !== vector[field]) {
      failures += 1;
      console.log(`MISMATCH ${vector.input.key_name.slice(0, 30)} ${field}: ${value} != ${vector[field]}`);
    }
  }
}
if (failures > 0 || vectors.length === 0) {
  console.log(`failed: ${failures} mismatches in ${vectors.length} vectors`);
  process.exit(1);
}
console.log(`ok ${vectors.length} vectors`);
