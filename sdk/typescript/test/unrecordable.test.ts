// A result the ledger cannot record never re-fires its effect (docs/spec.md section 5): the
// trial's scenarios (a Date in the result, a 2 MB result), each retried by a new worker.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  type Json,
  ResultUnrecordableError,
  type RunToolArgs,
  canonicalJson,
  jsonable,
  runTool,
  sha256Hex,
} from "../src/index.js";
import { channel, client, noServer } from "./env.js";

const TWO_MB = "x".repeat(2 * 1024 * 1024);

function refundTool(answer: () => unknown): { args: RunToolArgs<Json>; refunds: () => number } {
  let refunds = 0;
  const args: RunToolArgs<Json> = {
    channelId: channel(),
    keyName: "refund:4471",
    toolName: "refund",
    params: { order: 4471 },
    leaseSeconds: 5,
    fn: async () => {
      refunds += 1;
      return answer() as Json;
    },
  };
  return { args, refunds: () => refunds };
}

for (const [name, answer, reason, digestOf] of [
  ["a Date", () => ({ refund: "re_1", at: new Date() }), "is not a JSON value", "inspect"],
  ["2 MB", () => TWO_MB, "result is 2097154 bytes of canonical JSON", "canonical JSON"],
] as const) {
  const title = `a result with ${name} runs the tool once; a new worker's retry throws the recorded failure`;
  test(title, { skip: noServer }, async () => {
    const tool = refundTool(answer);
    const ran = (e: unknown) =>
      e instanceof ResultUnrecordableError &&
      e.code === "result_unrecordable" &&
      e.message.includes("the tool ran (its effect happened)") &&
      e.message.includes("failed for good with code result_unrecordable") &&
      e.message.includes(reason);
    await assert.rejects(runTool(client({ workerId: "worker-a" }), tool.args), ran);
    const failed = await client().getExecution(tool.args as { channelId: string; keyName: string });
    assert.equal(failed?.status, "failed");
    assert.ok(failed?.error?.startsWith("result_unrecordable: "), failed?.error ?? "");
    assert.ok(failed?.error?.includes(`sha256 of its ${digestOf}: `));
    if (digestOf === "canonical JSON") assert.ok(failed?.error?.includes(sha256Hex(canonicalJson(TWO_MB))));
    await assert.rejects(
      runTool(client({ workerId: "worker-b" }), tool.args),
      (e: unknown) => e instanceof ResultUnrecordableError && e.code === "result_unrecordable",
    );
    assert.equal(tool.refunds(), 1);
  });
}

test("resultEncoder: jsonable records a Date as its ISO string", { skip: noServer }, async () => {
  const at = new Date("2026-12-04T13:00:00.000Z");
  const tool = refundTool(() => ({ refund: "re_3", at }));
  const run = await runTool(client(), { ...tool.args, resultEncoder: jsonable });
  assert.deepEqual(run.result, { refund: "re_3", at: "2026-12-04T13:00:00.000Z" });
  const again = await runTool(client(), tool.args);
  assert.deepEqual([again.status, tool.refunds()], ["replayed", 1]);
});
