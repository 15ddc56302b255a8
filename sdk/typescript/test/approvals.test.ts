import assert from "node:assert/strict";
import { test } from "node:test";

import {
  ApprovalDeniedError,
  ApprovalPendingError,
  ConflictError,
  operationId,
  runTool,
  type ApprovalRule,
  type Json,
} from "../src/index.js";
import { approverToken, channel, client, noServer, url } from "./env.js";

const OVER_LIMIT: ApprovalRule = { when: (p) => (p["amount_cents"] as number) > 10_000 };

/** A person's decision through the approval route, with the approver's token. */
async function decide(verb: "approve" | "deny", channelId: string, keyName: string, requestHash: string): Promise<void> {
  const body = { channel_id: channelId, key_name: keyName, request_hash: requestHash, reason: "too much" };
  const response = await fetch(`${url}/v1/approvals/${operationId(channelId, keyName)}/${verb}`, {
    method: "POST",
    headers: { authorization: `Bearer ${approverToken}`, "content-type": "application/json" },
    body: JSON.stringify(verb === "approve" ? { ...body, reason: undefined } : body),
  });
  assert.equal(response.status, 200, await response.text());
}

function refund(keyName: string, amount: number, rule: ApprovalRule, ran: { count: number }) {
  return {
    channelId: channel(),
    keyName,
    toolName: "refund",
    params: { amount_cents: amount } as Record<string, Json>,
    requireApproval: rule,
    fn: async () => {
      ran.count += 1;
      return { refunded: amount };
    },
  };
}

async function pendingOf(run: Promise<unknown>): Promise<ApprovalPendingError> {
  const error = await run.then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(error instanceof ApprovalPendingError, String(error));
  assert.ok(error.pending !== null);
  return error;
}

test("a call over the limit waits for a person's yes, then runs once", { skip: noServer }, async () => {
  const ran = { count: 0 };
  const args = refund("refund:1", 25_000, OVER_LIMIT, ran);
  const pending = await pendingOf(runTool(client(), args));
  assert.equal(ran.count, 0);
  await pendingOf(runTool(client(), args)); // asked again, still nothing runs
  await decide("approve", args.channelId, args.keyName, pending.pending!.requestHash);
  const done = await runTool(client(), args);
  assert.deepEqual([done.status, done.result, ran.count], ["claimed", { refunded: 25_000 }, 1]);
  const again = await runTool(client(), args);
  assert.deepEqual([again.status, ran.count], ["replayed", 1]);
  await assert.rejects(runTool(client(), { ...args, params: { amount_cents: 99_000 } }), ConflictError);
  assert.equal(ran.count, 1);
});

test("a denied call throws the reason and never runs", { skip: noServer }, async () => {
  const ran = { count: 0 };
  const args = refund("refund:2", 40_000, OVER_LIMIT, ran);
  const pending = await pendingOf(runTool(client(), args));
  await decide("deny", args.channelId, args.keyName, pending.pending!.requestHash);
  await assert.rejects(runTool(client(), args), (e: unknown) => {
    assert.ok(e instanceof ApprovalDeniedError);
    assert.match(e.message, /too much/);
    return true;
  });
  assert.equal(ran.count, 0);
});

test("onPending wait: runTool returns once a person approves", { skip: noServer }, async () => {
  const ran = { count: 0 };
  const args = refund("refund:3", 30_000, { ...OVER_LIMIT, onPending: "wait", pollSeconds: 0.1 }, ran);
  const pending = await pendingOf(runTool(client(), { ...args, requireApproval: OVER_LIMIT }));
  const waiting = runTool(client(), args);
  await decide("approve", args.channelId, args.keyName, pending.pending!.requestHash);
  const done = await waiting;
  assert.deepEqual([done.status, ran.count], ["claimed", 1]);
});

test("a call the rule does not select runs at once", { skip: noServer }, async () => {
  const ran = { count: 0 };
  const done = await runTool(client(), refund("refund:4", 500, OVER_LIMIT, ran));
  assert.deepEqual([done.status, ran.count], ["claimed", 1]);
});
