import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import {
  InvalidArgumentError,
  canonicalJson,
  idempotencyKey,
  operationId,
  requestHash,
  stepKeyName,
} from "../src/index.js";
import { vectors } from "./env.js";

interface Vector {
  input: {
    channel_id: string;
    key_name: string;
    tool_name: string;
    params: Record<string, unknown>;
    dedup_fields: string[] | null;
  };
  canonical_params: string;
  request_hash: string;
  operation_id: string;
  idempotency_key: string;
}

test("every identity vector re-derives", { skip: vectors === undefined && "ONCELOG_VECTORS unset" }, () => {
  const all = JSON.parse(readFileSync(vectors ?? "", "utf8")) as Vector[];
  assert.ok(all.length > 10);
  for (const v of all) {
    const rh = requestHash(v.input.tool_name, v.input.params, v.input.dedup_fields);
    const op = operationId(v.input.channel_id, v.input.key_name);
    assert.equal(canonicalJson(v.input.params), v.canonical_params);
    assert.equal(rh, v.request_hash);
    assert.equal(op, v.operation_id);
    assert.equal(idempotencyKey(op, rh), v.idempotency_key);
  }
});

test("what has no canonical form is refused", () => {
  for (const bad of [Number.NaN, Infinity, -Infinity, undefined, () => 1, new Date(0), 1n]) {
    assert.throws(() => canonicalJson({ x: bad }), InvalidArgumentError);
  }
  assert.throws(() => requestHash("t", { a: 1 }, ["b"]), /not in params/);
  assert.throws(() => stepKeyName(-1), InvalidArgumentError);
  assert.equal(stepKeyName(3), "step-3");
});
