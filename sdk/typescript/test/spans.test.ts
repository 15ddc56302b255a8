// One `oncelog.<kind>` client span per call, with the application's tracer provider (the
// real OpenTelemetry SDK, spans kept in memory): a child of the active span, current while
// the call is sent (the traceparent names it), and never a claim token on it.
import assert from "node:assert/strict";
import { test } from "node:test";

import { SpanKind, SpanStatusCode, context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";

import { ConflictError, LedgerClient, operationId } from "../src/index.js";
import { type Sent, TOKEN, fakeServer } from "./fakeServer.js";

context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
const exporter = new InMemorySpanExporter();
trace.setGlobalTracerProvider(
  new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
);
const tracer = trace.getTracer("tests");
const ref = { channelId: "run-1", keyName: "charge:1" };

test("a call is a client span under the active one, named by its kind", async () => {
  exporter.reset();
  const sent: Sent[] = [];
  const client = new LedgerClient({ url: "http://ledger.invalid", token: "t", fetch: fakeServer(sent) });
  await tracer.startActiveSpan("agent step", async (step) => {
    const claim = await client.claimExecution({ ...ref, toolName: "charge", params: { n: 1 } });
    await client.completeExecution(ref, claim.claimToken ?? "", { ok: true });
    step.end();
  });
  const spans = exporter.getFinishedSpans();
  const step = spans.find((s) => s.name === "agent step");
  const claim = spans.find((s) => s.name === "oncelog.claim");
  const complete = spans.find((s) => s.name === "oncelog.complete");
  assert.ok(step && claim && complete, spans.map((s) => s.name).join());
  for (const [span, sentBy] of [[claim, sent[0]], [complete, sent[1]]] as const) {
    assert.equal(span.kind, SpanKind.CLIENT);
    assert.equal(span.parentSpanContext?.spanId, step.spanContext().spanId);
    const { traceId, spanId } = span.spanContext();
    assert.equal(sentBy?.headers.get("traceparent"), `00-${traceId}-${spanId}-01`);
  }
  assert.deepEqual(claim.attributes, {
    "oncelog.kind": "claim",
    "oncelog.channel_id": "run-1",
    "oncelog.key_name": "charge:1",
    "oncelog.operation_id": operationId("run-1", "charge:1"),
    "oncelog.tool_name": "charge",
    "oncelog.effect": "external",
    "oncelog.outcome": "claimed",
    "oncelog.status": "claimed",
    "oncelog.epoch": 1,
    "oncelog.idempotency_key": "idem-1",
  });
  assert.equal(complete.attributes["oncelog.status"], "completed");
  const everything = JSON.stringify(spans.map((s) => [s.name, s.attributes, s.events, s.links]));
  assert.ok(sent.some((s) => s.body.includes(TOKEN))); // the token did travel, in a body
  assert.ok(!everything.includes(TOKEN));
});

test("a typed error's code goes on error.type", async () => {
  exporter.reset();
  const client = new LedgerClient({ url: "http://ledger.invalid", token: "t", fetch: fakeServer([]) });
  const args = { channelId: "run-1", keyName: "conflict", toolName: "charge", params: {} };
  await assert.rejects(client.claimExecution(args), ConflictError);
  const [span] = exporter.getFinishedSpans();
  assert.equal(span?.name, "oncelog.claim");
  assert.equal(span?.attributes["error.type"], "conflict");
  assert.equal(span?.status.code, SpanStatusCode.ERROR);
});

test("an absent execution is an answer: its get span has no error", async () => {
  exporter.reset();
  const client = new LedgerClient({ url: "http://ledger.invalid", token: "t", fetch: fakeServer([]) });
  assert.equal(await client.getExecution({ channelId: "run-1", keyName: "absent" }), null);
  const [span] = exporter.getFinishedSpans();
  assert.equal(span?.name, "oncelog.get");
  assert.equal(span?.attributes["error.type"], undefined);
  assert.equal(span?.status.code, SpanStatusCode.UNSET);
});
