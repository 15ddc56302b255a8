import assert from "node:assert/strict";
import { test } from "node:test";

import {
  ExecutionCancelledError,
  InProgressError,
  LeaseLostError,
  runTool,
  type ToolContext,
} from "../src/index.js";
import { channel, client, noServer } from "./env.js";

test("runTool runs once, then replays the recorded result", { skip: noServer }, async () => {
  const ledger = client();
  const ref = { channelId: channel(), keyName: "charge:7" };
  let calls = 0;
  const args = {
    ...ref,
    toolName: "charge",
    params: { order: 7 },
    leaseSeconds: 3,
    fn: async (ctx: ToolContext) => {
      calls += 1;
      return { charged: ctx.idempotencyKey };
    },
  };
  const first = await runTool(ledger, args);
  const second = await runTool(client(), args);
  assert.equal(calls, 1);
  assert.deepEqual([first.status, second.status], ["claimed", "replayed"]);
  assert.deepEqual(second.result, first.result);
  assert.equal(first.reconciled, null);
});

test("a reclaim reconciles first and completes as found", { skip: noServer }, async () => {
  const ref = { channelId: channel(), keyName: "email:1" };
  const crashed = await client({ workerId: "crashed" }).claimExecution({
    ...ref,
    toolName: "email",
    params: { to: "a@example.org" },
    leaseSeconds: 1,
  });
  assert.equal(crashed.status, "claimed");
  await assert.rejects(
    runTool(client(), { ...ref, toolName: "email", params: { to: "a@example.org" }, fn: async () => 1 }),
    InProgressError,
  );
  let ran = false;
  const run = await runTool(client({ workerId: "rescuer" }), {
    ...ref,
    toolName: "email",
    params: { to: "a@example.org" },
    leaseSeconds: 3,
    onInProgress: "wait",
    waitTimeoutSeconds: 30,
    reconcile: async (previous) => (previous.workerId === "crashed" ? { sent: "earlier" } : null),
    fn: async () => {
      ran = true;
      return { sent: "now" };
    },
  });
  assert.equal(ran, false);
  assert.deepEqual([run.status, run.reconciled, run.result], ["reclaimed", "found", { sent: "earlier" }]);
  assert.equal(run.execution.epoch, 2);
  assert.equal(run.previous?.workerId, "crashed");
});

test("a failure is recorded and thrown; a retryable one is reclaimed", { skip: noServer }, async () => {
  const ref = { channelId: channel(), keyName: "flaky" };
  const boom = Object.assign(new Error("downstream 503"), { retryable: true });
  await assert.rejects(
    runTool(client(), { ...ref, toolName: "t", params: {}, fn: async () => Promise.reject(boom) }),
    (e: unknown) => e === boom,
  );
  const ledger = client();
  const failed = await ledger.getExecution(ref);
  assert.deepEqual([failed?.status, failed?.error], ["failed", "Error: downstream 503"]);
  const again = await runTool(ledger, { ...ref, toolName: "t", params: {}, fn: async () => "ok" });
  assert.deepEqual([again.status, again.result], ["reclaimed", "ok"]);
});

test("a cancel stops the tool at the next heartbeat", { skip: noServer }, async () => {
  const ref = { channelId: channel(), keyName: "long" };
  const ledger = client();
  const run = runTool(ledger, {
    ...ref,
    toolName: "t",
    params: {},
    leaseSeconds: 1.5,
    fn: async (ctx) => {
      await ledger.cancelExecution(ref, "user said stop");
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
      return "never recorded";
    },
  });
  await assert.rejects(run, (e: unknown) => e instanceof ExecutionCancelledError && e.code === "cancelled");
  const recorded = await ledger.getExecution(ref);
  assert.deepEqual([recorded?.status, recorded?.error], ["failed", "cancelled: user said stop"]);
});

test("heartbeats that never arrive lose the lease after its deadline", { skip: noServer }, async () => {
  const dropBeats: typeof fetch = async (input, init) => {
    if (String(input).endsWith("/heartbeat")) throw new TypeError("network down");
    return fetch(input, init);
  };
  const ledger = client({ fetch: dropBeats, attempts: 1 });
  const ref = { channelId: channel(), keyName: "cut-off" };
  let aborted = false;
  await assert.rejects(
    runTool(ledger, {
      ...ref,
      toolName: "t",
      params: {},
      leaseSeconds: 1,
      fn: async (ctx) => {
        await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
        aborted = true;
        return 0;
      },
    }),
    (e: unknown) => e instanceof LeaseLostError && e.code === "lease_lost",
  );
  assert.equal(aborted, true);
});
