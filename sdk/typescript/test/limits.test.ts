import assert from "node:assert/strict";
import { test } from "node:test";

import { InvalidArgumentError, LedgerClient, MAX_JSON_DEPTH, type Json } from "../src/index.js";

/** A client whose fetch fails the test: every refusal must come before anything is sent. */
function offline(): LedgerClient {
  const fetch = () => assert.fail("a request was sent");
  return new LedgerClient({ url: "http://127.0.0.1:1", token: "t", workerId: "w", attempts: 1, fetch });
}

function nested(depth: number): Json {
  let value: Json = {};
  for (let i = 1; i < depth; i += 1) value = { a: value };
  return value;
}

const refused = (pattern: RegExp) => (e: unknown) =>
  e instanceof InvalidArgumentError && e.code === "invalid_argument" && pattern.test(e.message);

const CLAIM = { channelId: "run", keyName: "k", toolName: "t", params: { a: 1 } };

test("a number out of its documented range is refused before anything is sent", async () => {
  const client = offline();
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ retentionSeconds: 1e20 }, /retention_seconds=100000000000000000000 is outside \[0\.001, 3153600000\]/],
    [{ retentionSeconds: Infinity }, /retention_seconds=Infinity is outside/],
    [{ retentionSeconds: 0 }, /retention_seconds=0 is outside/],
    [{ leaseSeconds: 0.5 }, /lease_seconds=0\.5 is outside \[1, 86400\]/],
    [{ leaseSeconds: NaN }, /lease_seconds=NaN is outside/],
    [{ leaseSeconds: "60" }, /lease_seconds must be a number, got string/],
  ];
  for (const [extra, pattern] of cases) {
    await assert.rejects(client.claimExecution({ ...CLAIM, ...extra } as never), refused(pattern));
  }
  const { keyName: _, ...byStep } = CLAIM;
  await assert.rejects(client.claimExecution({ ...byStep, step: 2 ** 53 }), refused(/step=/));
  await assert.rejects(client.claimExecution({ ...byStep, step: 1.5 }), refused(/integer/));
  const ref = { channelId: "run", keyName: "k" };
  await assert.rejects(client.heartbeatExecution(ref, "tok", 1e20), refused(/lease_seconds/));
});

test("params and results nested past the one limit are refused, at the limit taken", async () => {
  const client = offline();
  const deep = new RegExp(`nests objects and arrays more than ${MAX_JSON_DEPTH} deep`);
  for (const depth of [MAX_JSON_DEPTH + 1, 300, 20_000]) {
    const params = nested(depth) as Record<string, Json>;
    await assert.rejects(client.claimExecution({ ...CLAIM, params }), refused(deep));
    const ref = { channelId: "run", keyName: "k" };
    await assert.rejects(client.completeExecution(ref, "tok", nested(depth)), refused(deep));
  }
  const atLimit = nested(MAX_JSON_DEPTH) as Record<string, Json>;
  await assert.rejects(client.claimExecution({ ...CLAIM, params: atLimit }), /a request was sent/);
});

test("the client's own numbers are checked when it is made", () => {
  const options = { url: "http://127.0.0.1:1", token: "t" };
  assert.throws(() => new LedgerClient({ ...options, attempts: 0 }), refused(/attempts=0/));
  assert.throws(() => new LedgerClient({ ...options, attempts: 1.5 }), refused(/integer/));
  const slow = { ...options, attemptTimeoutMs: Infinity };
  assert.throws(() => new LedgerClient(slow), refused(/attemptTimeoutMs/));
});
