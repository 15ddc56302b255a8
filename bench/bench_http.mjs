// The Node side of bench/bench_http.py: claims and cycles through the TypeScript SDK.
//
//   node bench/bench_http.mjs URL TOKEN SEQUENTIAL SECONDS WORKERS
//
// Prints one JSON object: claim_p50_ms, claim_p99_ms (one sequential worker, fresh claims)
// and cycles_per_s (claim + complete of fresh steps, WORKERS concurrent for SECONDS), with the
// p50 of a cycle, a claim and a completion under that load.
import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";

import { LedgerClient } from "../sdk/typescript/dist/src/index.js";

const [url, token, sequential, seconds, workers] = process.argv.slice(2);
const client = new LedgerClient({ url, token, workerId: "bench-http-node" });
const pct = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};
const claim = (channelId, step) => client.claimExecution({ channelId, step, toolName: "t", params: {} });

const latencies = [];
const channel = `seq-${randomUUID().slice(0, 8)}`;
for (let step = 0; step < Number(sequential); step += 1) {
  const began = performance.now();
  await claim(channel, step);
  latencies.push(performance.now() - began);
}

let done = 0;
const claimsUnderLoad = [];
const completesUnderLoad = [];
const cyclesUnderLoad = [];
const stopAt = performance.now() + Number(seconds) * 1000;
async function worker(w) {
  const channelId = `w${w}-${randomUUID().slice(0, 8)}`;
  for (let step = 0; performance.now() < stopAt; step += 1) {
    const t0 = performance.now();
    const c = await claim(channelId, step);
    const t1 = performance.now();
    await client.completeExecution({ channelId, keyName: `step-${step}` }, c.claimToken, step);
    claimsUnderLoad.push(t1 - t0);
    completesUnderLoad.push(performance.now() - t1);
    cyclesUnderLoad.push(performance.now() - t0);
    done += 1;
  }
}
const began = performance.now();
await Promise.all(Array.from({ length: Number(workers) }, (_, w) => worker(w)));
const elapsed = (performance.now() - began) / 1000;
const round = (x, d) => Math.round(x * 10 ** d) / 10 ** d;
console.log(
  JSON.stringify({
    claim_p50_ms: round(pct(latencies, 0.5), 2),
    claim_p99_ms: round(pct(latencies, 0.99), 2),
    cycles_per_s: round(done / elapsed, 1),
    loaded_cycle_p50_ms: round(pct(cyclesUnderLoad, 0.5), 2),
    loaded_claim_p50_ms: round(pct(claimsUnderLoad, 0.5), 2),
    loaded_complete_p50_ms: round(pct(completesUnderLoad, 0.5), 2),
  }),
);
