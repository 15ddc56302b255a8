// A TypeScript worker of the mixed fleet: runs the step the Python worker died in.
//
//   node tests/crosslang/ts_worker.mjs DOWNSTREAM CHANNEL
//
// It waits for the dead worker's lease to lapse, reclaims, asks the downstream whether it
// already saw the effect (by the idempotency key) and completes with what it finds, or
// charges now. Prints the ToolRun as JSON.
import { appendFileSync, readFileSync } from "node:fs";

import { LedgerClient, runTool } from "../../sdk/typescript/dist/src/index.js";

const [downstream, channelId] = process.argv.slice(2);
const client = new LedgerClient({
  url: process.env.ONCELOG_URL,
  token: process.env.ONCELOG_HTTP_WRITE_TOKEN,
  workerId: "ts-worker",
});

function seen(key) {
  const lines = readFileSync(downstream, "utf8").split("\n").filter(Boolean);
  return lines.map((line) => JSON.parse(line)).find((effect) => effect.key === key) ?? null;
}

const run = await runTool(client, {
  channelId,
  keyName: "charge:order-1",
  toolName: "charge",
  params: { order: "1" },
  leaseSeconds: 5,
  onInProgress: "wait",
  waitTimeoutSeconds: 60,
  reconcile: async (_previous, ctx) => {
    const effect = seen(ctx.idempotencyKey);
    return effect === null ? null : { charged_by: effect.by };
  },
  fn: async (ctx) => {
    appendFileSync(downstream, `${JSON.stringify({ key: ctx.idempotencyKey, by: "ts-worker" })}\n`);
    return { charged_by: "ts-worker" };
  },
});
console.log(JSON.stringify(run));
