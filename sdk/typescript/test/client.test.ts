import assert from "node:assert/strict";
import { test } from "node:test";

import {
  ConflictError,
  InvalidArgumentError,
  StaleClaimError,
  UnauthorizedError,
  operationId,
} from "../src/index.js";
import { channel, client, noServer, url } from "./env.js";

test("claim, heartbeat, complete, then a replay", { skip: noServer }, async () => {
  const ledger = client({ workerId: "ts-a" });
  const ref = { channelId: channel(), keyName: "charge:1" };
  const claim = await ledger.claimExecution({ ...ref, toolName: "charge", params: { order: 1 } });
  assert.equal(claim.status, "claimed");
  assert.equal(claim.execution.id, operationId(ref.channelId, ref.keyName));
  assert.equal(claim.execution.workerId, "ts-a");
  assert.ok(claim.owned && claim.claimToken !== null);
  const beat = await ledger.heartbeatExecution(ref, claim.claimToken);
  assert.equal(beat.cancelRequested, false);
  const done = await ledger.completeExecution(ref, claim.claimToken, { charged: true });
  assert.equal(done.status, "completed");
  const again = await ledger.claimExecution({ ...ref, toolName: "charge", params: { order: 1 } });
  assert.deepEqual([again.status, again.result, again.claimToken], ["replayed", { charged: true }, null]);
  assert.deepEqual((await ledger.getExecution(ref))?.result, { charged: true });
});

test("typed errors carry the stable code", { skip: noServer }, async () => {
  const ledger = client();
  const ref = { channelId: channel(), keyName: "k" };
  const claim = await ledger.claimExecution({ ...ref, toolName: "t", params: { n: 1 } });
  await assert.rejects(
    ledger.claimExecution({ ...ref, toolName: "t", params: { n: 2 } }),
    (e: unknown) => e instanceof ConflictError && e.code === "conflict" && e.status === 409,
  );
  await assert.rejects(
    ledger.completeExecution(ref, "f".repeat(32), 1),
    (e: unknown) => e instanceof StaleClaimError && e.code === "stale_claim",
  );
  await assert.rejects(
    ledger.claimExecution({ ...ref, toolName: "t", params: { n: Number.NaN } }),
    InvalidArgumentError,
  );
  await assert.rejects(
    ledger.claimExecution({ ...ref, toolName: "t", params: {}, leaseSeconds: 0.1 }),
    (e: unknown) => e instanceof InvalidArgumentError && e.status === 400,
  );
  await assert.rejects(
    client({ token: "wrong" }).claimExecution({ ...ref, toolName: "t", params: {} }),
    UnauthorizedError,
  );
  assert.equal(await ledger.cancelExecution(ref, "enough"), "cancel_requested");
  const beat = await ledger.heartbeatExecution(ref, claim.claimToken ?? "");
  assert.deepEqual([beat.cancelRequested, beat.cancelReason], [true, "enough"]);
  assert.equal(await ledger.getExecution({ channelId: ref.channelId, keyName: "absent" }), null);
});

test("a POST whose answer was lost is sent again as the same request", { skip: noServer }, async () => {
  // The first answer of each call is dropped after the server acted on it: the retry
  // carries the same Idempotency-Key, so the claim gets its own grant (and token) back.
  const seen: string[] = [];
  const lossy: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    const key = new Headers(init?.headers).get("idempotency-key") ?? "";
    seen.push(key);
    if (seen.filter((k) => k === key).length === 1) throw new TypeError("connection reset");
    return response;
  };
  const ledger = client({ fetch: lossy, workerId: "ts-lossy" });
  const ref = { channelId: channel(), keyName: "once" };
  const claim = await ledger.claimExecution({ ...ref, toolName: "t", params: {} });
  assert.equal(claim.status, "claimed");
  assert.equal(claim.execution.epoch, 1);
  const done = await ledger.completeExecution(ref, claim.claimToken ?? "", "ok");
  assert.equal(done.status, "completed");
  assert.equal(seen.length, 4);
  assert.equal(new Set(seen).size, 2);
  const other = await client().claimExecution({ ...ref, toolName: "t", params: {} });
  assert.equal(other.status, "replayed");
  assert.ok(url !== undefined);
});
