// The Vercel AI SDK agent of src/agent.ts, offline (ai/test's mock model), on a real ledger.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";

import { ConflictError, LedgerClient } from "@oncelog/sdk";
import { MockLanguageModelV3 } from "ai/test";

import { PaymentProvider, runAgent } from "../src/agent.js";

const url = process.env["ONCELOG_URL"];
const skip = url === undefined ? "ONCELOG_URL is not set (no server)" : false;
const client = () => new LedgerClient({ url: url ?? "", token: process.env["ONCELOG_HTTP_WRITE_TOKEN"] ?? "" });

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};

/** A model that asks for charge(A1, amountCents), then answers; or dies after the tool ran. */
function model(amountCents: number, { dieAfterTheTool = false } = {}) {
  let calls = 0;
  return new MockLanguageModelV3({
    doGenerate: async () => {
      calls += 1;
      if (calls === 1) {
        const input = JSON.stringify({ order: "A1", amountCents });
        return {
          content: [{ type: "tool-call", toolCallId: `call-${randomUUID()}`, toolName: "charge", input }],
          finishReason: { unified: "tool-calls", raw: undefined },
          usage,
          warnings: [],
        };
      }
      if (dieAfterTheTool) throw new Error("the agent's process died after the charge");
      return {
        content: [{ type: "text", text: "charged" }],
        finishReason: { unified: "stop", raw: undefined },
        usage,
        warnings: [],
      };
    },
  });
}

function causes(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let e = error; e !== undefined && e !== null; e = (e as { cause?: unknown }).cause) chain.push(e);
  return chain;
}

test("a crash and a rerun replay the recorded call: one charge", { skip }, async () => {
  const provider = new PaymentProvider();
  const channel = `vercel-${randomUUID()}`;
  await assert.rejects(runAgent(client(), channel, model(4200, { dieAfterTheTool: true }), provider));
  assert.equal(provider.charges.length, 1);
  const rerun = await runAgent(client(), channel, model(4200), provider);
  assert.equal(rerun.text, "charged");
  assert.equal(provider.charges.length, 1);
  const results = rerun.steps.flatMap((step) => step.toolResults);
  assert.deepEqual(results.map((r) => r.output), [{ chargeId: "ch_A1_1" }]);
});

test("a rerun with a changed argument raises the conflict, not a second charge", { skip }, async () => {
  const provider = new PaymentProvider();
  const channel = `vercel-${randomUUID()}`;
  await runAgent(client(), channel, model(4200), provider);
  const changed = await runAgent(client(), channel, model(4300), provider).then(
    (result) => result.steps.flatMap((step) => step.content).find((part) => part.type === "tool-error"),
    (error: unknown) => error,
  );
  const error = changed !== null && typeof changed === "object" && "error" in changed ? changed.error : changed;
  assert.ok(causes(error).some((e) => e instanceof ConflictError), String(error));
  assert.equal(provider.charges.length, 1);
});
