// The caller's W3C trace context on each call, with @opentelemetry/api and no tracer
// provider (an application that propagates but does not record): the active span's
// context goes out as it is. Offline: a fake fetch keeps what each call sent.
import assert from "node:assert/strict";
import { test } from "node:test";

import { ROOT_CONTEXT, TraceFlags, context, createTraceState, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";

import { LedgerClient } from "../src/index.js";
import { type Sent, fakeServer } from "./fakeServer.js";

context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const SPAN_ID = "00f067aa0ba902b7";
const ref = { channelId: "run-1", keyName: "charge:1" };

function ledger(sent: Sent[]): LedgerClient {
  return new LedgerClient({ url: "http://ledger.invalid", token: "t", fetch: fakeServer(sent) });
}

/** Every call of the client once; what each sent. */
async function everyCall(): Promise<Sent[]> {
  const sent: Sent[] = [];
  const client = ledger(sent);
  const claim = await client.claimExecution({ ...ref, toolName: "charge", params: {} });
  const token = claim.claimToken ?? "";
  await client.heartbeatExecution(ref, token);
  await client.completeExecution(ref, token, 1);
  await client.failExecution(ref, token, "boom");
  await client.releaseExecution(ref, token);
  await client.cancelExecution(ref);
  await client.getExecution(ref);
  assert.equal(sent.length, 7);
  return sent;
}

test("each call carries the active span's traceparent and tracestate", async () => {
  const agentStep = trace.wrapSpanContext({
    traceId: TRACE_ID,
    spanId: SPAN_ID,
    traceFlags: TraceFlags.SAMPLED,
    traceState: createTraceState("congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"),
  });
  const sent = await context.with(trace.setSpan(ROOT_CONTEXT, agentStep), everyCall);
  for (const { url, headers } of sent) {
    assert.equal(headers.get("traceparent"), `00-${TRACE_ID}-${SPAN_ID}-01`, url);
    assert.equal(headers.get("tracestate"), "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7", url);
  }
});

test("an unsampled span's flags go as they are", async () => {
  const sent: Sent[] = [];
  const unsampled = trace.wrapSpanContext({ traceId: TRACE_ID, spanId: SPAN_ID, traceFlags: 0 });
  await context.with(trace.setSpan(ROOT_CONTEXT, unsampled), () =>
    ledger(sent).claimExecution({ ...ref, toolName: "charge", params: {} }),
  );
  assert.equal(sent[0]?.headers.get("traceparent"), `00-${TRACE_ID}-${SPAN_ID}-00`);
  assert.equal(sent[0]?.headers.has("tracestate"), false);
});

test("no trace header without an active span, or with an invalid one", async () => {
  for (const { headers } of await everyCall()) {
    assert.equal(headers.has("traceparent"), false);
    assert.equal(headers.has("tracestate"), false);
  }
  const invalid = trace.wrapSpanContext({ traceId: "0".repeat(32), spanId: SPAN_ID, traceFlags: 1 });
  const sent = await context.with(trace.setSpan(ROOT_CONTEXT, invalid), everyCall);
  assert.ok(sent.every(({ headers }) => !headers.has("traceparent")));
});
