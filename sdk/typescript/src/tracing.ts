// The caller's trace on each call (docs/tracing.md), through `@opentelemetry/api` when the
// application has it: an optional peer dependency, looked up once, on the first call. Without
// it nothing is sent and no span made. With it, each call is an `oncelog.<kind>` client span,
// a child of the active span, and carries its W3C `traceparent` (and `tracestate`) headers:
// `serve` puts them on the request record, and its fold span links to the call.
import type * as OtelApi from "@opentelemetry/api";

type Api = typeof OtelApi;
/** What a span says: oncelog's attribute names, the same as Python's. */
export type Attributes = Record<string, string | number | boolean>;
/** W3C trace context headers (`traceparent`, `tracestate`), or none. */
export type Trace = Record<string, string>;

let loading: Promise<Api | null> | undefined;

/** `@opentelemetry/api` when the application has it installed, else null (asked once). */
export function otel(): Promise<Api | null> {
  loading ??= import("@opentelemetry/api").then(
    (api: Api) => api,
    () => null,
  );
  return loading;
}

/** The active span's context as W3C headers; none without a valid active span. Always the
 * W3C format, whatever propagator the application registered: as the Python SDK, the
 * headers are part of the ledger's records, and nothing else (no baggage) goes into them. */
export function traceHeaders(api: Api): Trace {
  const span = api.trace.getSpanContext(api.context.active());
  if (span === undefined || !api.isSpanContextValid(span)) return {};
  const flags = (span.traceFlags & 0xff).toString(16).padStart(2, "0");
  const headers: Trace = { traceparent: `00-${span.traceId}-${span.spanId}-${flags}` };
  const state = span.traceState?.serialize();
  if (state) headers["tracestate"] = state;
  return headers;
}

/** `call` inside an `oncelog.<kind>` client span, active while it runs, so the headers it
 * is given carry that span; `answered` describes the answer. A typed error's stable `code`
 * goes on `error.type`. The attributes come from the call's identity and its answer, never
 * from a body: no claim token ever reaches a span. */
export async function inSpan<T>(
  api: Api,
  kind: string,
  attributes: Attributes,
  call: (headers: Trace) => Promise<T>,
  answered: (answer: T) => Attributes,
): Promise<T> {
  const tracer = api.trace.getTracer("oncelog");
  const options = { kind: api.SpanKind.CLIENT, attributes: { "oncelog.kind": kind, ...attributes } };
  return tracer.startActiveSpan(`oncelog.${kind}`, options, async (span) => {
    try {
      const answer = await call(traceHeaders(api));
      span.setAttributes(answered(answer));
      return answer;
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      span.setAttribute("error.type", typeof code === "string" ? code : "unknown");
      span.setStatus({ code: api.SpanStatusCode.ERROR });
      throw error;
    } finally {
      span.end();
    }
  });
}

/** What an answer of the write API says on the call's span: the claim's outcome or the
 * cancel's, then the execution's state, epoch and idempotency key. */
export function answerAttributes(kind: string, answer: unknown): Attributes {
  const attrs: Attributes = {};
  if (answer === null || typeof answer !== "object") return attrs;
  const fields = answer as Record<string, unknown>;
  const outcome = kind === "claim" ? fields["status"] : fields["outcome"];
  if (typeof outcome === "string") attrs["oncelog.outcome"] = outcome;
  const execution = (kind === "claim" ? fields["execution"] : fields) as Record<string, unknown>;
  if (typeof execution?.["status"] === "string" && typeof execution["epoch"] === "number") {
    attrs["oncelog.status"] = execution["status"];
    attrs["oncelog.epoch"] = execution["epoch"];
    if (typeof execution["idempotency_key"] === "string") {
      attrs["oncelog.idempotency_key"] = execution["idempotency_key"];
    }
  }
  return attrs;
}
