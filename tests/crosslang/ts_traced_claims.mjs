// A TypeScript caller inside an agent's span: the SDK sends its W3C trace context.
//
//   node ts_traced_claims.mjs TRACE_ID SPAN_ID CHANNEL
//
// Run from inside sdk/typescript/dist (tests/crosslang/test_typescript_tracing.py copies it
// there), so that its imports resolve to the package and its dev dependencies. Claims
// `traced` inside a span with these ids (an agent's: no tracer provider here, so the SDK's
// own span is a non-recording one with the same ids), completes it there, and claims
// `plain` outside any span; prints their claims as JSON, with the tokens (for the test to
// search serve's spans for them).
import { ROOT_CONTEXT, TraceFlags, context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { LedgerClient } from "@oncelog/sdk";

const [traceId, spanId, channelId] = process.argv.slice(2);
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
const client = new LedgerClient({
  url: process.env.ONCELOG_URL,
  token: process.env.ONCELOG_HTTP_WRITE_TOKEN,
  workerId: "ts-traced",
});
const claim = (keyName) => client.claimExecution({ channelId, keyName, toolName: "t", params: {} });

const agentStep = trace.wrapSpanContext({ traceId, spanId, traceFlags: TraceFlags.SAMPLED });
const traced = await context.with(trace.setSpan(ROOT_CONTEXT, agentStep), async () => {
  const held = await claim("traced");
  await client.completeExecution(held.execution, held.claimToken, { charged: true });
  return held;
});
const plain = await claim("plain");
const shown = ({ status, execution, claimToken }) => ({
  status,
  operationId: execution.id,
  claimToken,
});
console.log(JSON.stringify({ traced: shown(traced), plain: shown(plain) }));
