// The ledger's calls over oncelog's HTTP write API (docs/http-api.md): the same calls,
// statuses and errors as Python's LedgerClient, with no dependency beyond Node itself
// (`@opentelemetry/api`, when the application has it, traces them: ./tracing.ts).
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";

import {
  ConfigurationError,
  InvalidArgumentError,
  LedgerError,
  LedgerTimeoutError,
  NotFoundError,
  ServeUnreachableError,
  errorOf,
} from "./errors.js";
import { type Json, canonicalJson, operationId, stepKeyName } from "./identity.js";
import {
  MAX_ATTEMPTS,
  MAX_ATTEMPT_TIMEOUT_MS,
  MAX_LEASE_S,
  MAX_RETENTION_S,
  MAX_STEP,
  MIN_LEASE_S,
  MIN_RETENTION_S,
  checkDepth,
  checkInteger,
  checkNumber,
} from "./limits.js";
import { type Execution, type Claim, type Heartbeat, claimOf, executionOf } from "./results.js";
import { type Attributes, type Trace, answerAttributes, inSpan, otel } from "./tracing.js";

/** How to reach the write API. */
export interface ClientOptions {
  /** The `oncelog serve` base URL, e.g. `http://127.0.0.1:8765` (default `ONCELOG_URL`). */
  url?: string | undefined;
  /** ONCELOG_HTTP_WRITE_TOKEN of that server (default that environment variable). */
  token?: string | undefined;
  /** The name this worker claims with (default `host:pid:random`). */
  workerId?: string;
  /** How long one HTTP attempt may take, in ms (default 35 000: the server waits 30 s). */
  attemptTimeoutMs?: number;
  /** Attempts of one call, the same request each time (default 4). */
  attempts?: number;
  /** The fetch to use (default the global one): tests pass one that fails on purpose. */
  fetch?: typeof fetch;
}

/** A claim's approval policy: a person must approve these params before the effect. */
export interface ApprovalPolicy {
  /** The intent expires (approval_expired) this long after it is recorded. */
  timeoutSeconds: number;
  /** May the claiming worker approve it? */
  selfApproval?: boolean;
}

/** What `claimExecution` takes: `keyName` or `step`, as in Python. */
export interface ClaimArgs {
  channelId: string;
  keyName?: string;
  step?: number;
  toolName: string;
  params: Record<string, Json>;
  dedupFields?: string[] | null;
  leaseSeconds?: number;
  retentionSeconds?: number;
  effect?: "pure" | "external";
  /** Ask a person first: the answer is `awaiting_approval` until one decides. */
  approval?: ApprovalPolicy;
}

/** An execution, or what names one: its channel and key name. */
export interface ExecutionRef {
  channelId: string;
  keyName: string;
}

/** Statuses answered again with the same request (the fold never applies it twice). */
const RETRIED = new Set([409, 502, 503, 504]);
const RETRIED_409 = "request_in_flight";

/** Claim, heartbeat, complete, fail, release, cancel and get executions over HTTP. */
export class LedgerClient {
  readonly workerId: string;
  private readonly url: string;
  private readonly auth: string;
  private readonly attemptTimeoutMs: number;
  private readonly attempts: number;
  private readonly fetcher: typeof fetch;

  constructor(options: ClientOptions = {}) {
    this.url = serveUrl(options.url ?? process.env["ONCELOG_URL"]);
    const token = options.token ?? process.env["ONCELOG_HTTP_WRITE_TOKEN"];
    if (!token) {
      throw new ConfigurationError(
        "no write token: pass `token` or set ONCELOG_HTTP_WRITE_TOKEN (serve's write API token)",
      );
    }
    this.auth = `Bearer ${token}`;
    this.workerId = options.workerId ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 6)}`;
    const timeoutMs = options.attemptTimeoutMs ?? 35_000;
    this.attemptTimeoutMs = checkNumber("attemptTimeoutMs", timeoutMs, 1, MAX_ATTEMPT_TIMEOUT_MS);
    this.attempts = checkInteger("attempts", options.attempts ?? 4, 1, MAX_ATTEMPTS);
    this.fetcher = options.fetch ?? fetch;
  }

  /** A new attempt at `channelId`/`keyName` (or `step`): claimed, reclaimed, in_progress,
   * replayed, or awaiting_approval (with `approval`). The claim token comes back only on
   * claimed/reclaimed. */
  async claimExecution(args: ClaimArgs): Promise<Claim> {
    if ((args.keyName === undefined) === (args.step === undefined)) {
      throw new InvalidArgumentError("give exactly one of keyName and step");
    }
    const step = args.step === undefined ? 0 : checkInteger("step", args.step, 0, MAX_STEP);
    const leaseSeconds = args.leaseSeconds ?? 60;
    const retentionSeconds = args.retentionSeconds ?? 7 * 24 * 3600;
    checkNumber("lease_seconds", leaseSeconds, MIN_LEASE_S, MAX_LEASE_S);
    checkNumber("retention_seconds", retentionSeconds, MIN_RETENTION_S, MAX_RETENTION_S);
    checkDepth("params", args.params);
    canonicalJson(args.params);
    const body = {
      channel_id: args.channelId,
      key_name: args.keyName ?? stepKeyName(step),
      tool_name: args.toolName,
      params: args.params,
      dedup_fields: args.dedupFields ?? null,
      lease_seconds: leaseSeconds,
      retention_seconds: retentionSeconds,
      effect: args.effect ?? "external",
      worker_id: this.workerId,
      ...(args.approval === undefined
        ? {}
        : {
            approval: {
              timeout_seconds: checkNumber("timeoutSeconds", args.approval.timeoutSeconds, MIN_RETENTION_S, MAX_RETENTION_S),
              self_approval: args.approval.selfApproval ?? false,
            },
          }),
    };
    const traced = {
      ...identity(body.channel_id, body.key_name),
      "oncelog.tool_name": body.tool_name,
      "oncelog.effect": body.effect,
    };
    const exchange = (trace: Trace) => this.exchange("POST", "/v1/claims", body, trace);
    return claimOf(await this.send("claim", traced, exchange));
  }

  /** Record the result; fenced (`StaleClaimError`) unless `claimToken` holds the claim.
   * `reconciled` says how a previous attempt's unknown outcome was settled downstream. */
  async completeExecution(
    execution: ExecutionRef,
    claimToken: string,
    result: Json,
    options: { reconciled?: "found" | "not_found" } = {},
  ): Promise<Execution> {
    checkDepth("result", result);
    canonicalJson(result);
    const body = { claim_token: claimToken, result, reconciled: options.reconciled ?? null };
    return executionOf(await this.act(execution, "complete", body));
  }

  /** Record a failure; a retryable one can be reclaimed at once. */
  async failExecution(
    execution: ExecutionRef,
    claimToken: string,
    error: string,
    options: { retryable?: boolean; reconciled?: "found" | "not_found" } = {},
  ): Promise<Execution> {
    const body = {
      claim_token: claimToken,
      error,
      retryable: options.retryable ?? false,
      reconciled: options.reconciled ?? null,
    };
    return executionOf(await this.act(execution, "fail", body));
  }

  /** Extend the lease; the answer says whether a cancel was requested. */
  async heartbeatExecution(
    execution: ExecutionRef,
    claimToken: string,
    leaseSeconds?: number,
  ): Promise<Heartbeat> {
    if (leaseSeconds !== undefined) {
      checkNumber("lease_seconds", leaseSeconds, MIN_LEASE_S, MAX_LEASE_S);
    }
    const body = { claim_token: claimToken, lease_seconds: leaseSeconds ?? null };
    const answer = (await this.act(execution, "heartbeat", body)) as Record<string, unknown>;
    return {
      leaseDeadlineMs: answer["lease_deadline_ms"] as number,
      cancelRequested: answer["cancel_requested"] as boolean,
      cancelReason: (answer["cancel_reason"] as string | null) ?? null,
    };
  }

  /** Give the lease back without a result. */
  async releaseExecution(execution: ExecutionRef, claimToken: string): Promise<Execution> {
    return executionOf(await this.act(execution, "release", { claim_token: claimToken }));
  }

  /** Ask the holder to stop: `cancel_requested`, or an outcome naming the state. */
  async cancelExecution(execution: ExecutionRef, reason?: string): Promise<string> {
    const answer = await this.act(execution, "cancel", { reason: reason ?? null });
    return (answer as Record<string, string>)["outcome"] ?? "";
  }

  /** The execution after every request sent before this call (a read through the log);
   * null while it is absent. */
  async getExecution(execution: ExecutionRef): Promise<Execution | null> {
    const op = operationId(execution.channelId, execution.keyName);
    const query = new URLSearchParams({
      channel_id: execution.channelId,
      key_name: execution.keyName,
    });
    const path = `/v1/executions/${op}?${query}`;
    // Absent is an answer, not an error (nor on the call's span).
    const exchange = (trace: Trace) =>
      this.exchange("GET", path, undefined, trace).catch((error: unknown) => {
        if (error instanceof NotFoundError) return null;
        throw error;
      });
    const traced = identity(execution.channelId, execution.keyName);
    const answer = await this.send("get", traced, exchange);
    return answer === null ? null : executionOf(answer);
  }

  private act(execution: ExecutionRef, action: string, body: object): Promise<unknown> {
    const traced = identity(execution.channelId, execution.keyName);
    const named = { channel_id: execution.channelId, key_name: execution.keyName, ...body };
    const path = `/v1/executions/${traced["oncelog.operation_id"]}/${action}`;
    return this.send(action, traced, (trace) => this.exchange("POST", path, named, trace));
  }

  /** One call (`kind`: claim, complete, ...), in its span when the application traces;
   * `traced`: the operation's identity, for the span; `exchange` sends it with the
   * trace headers it is given. */
  private async send(
    kind: string,
    traced: Attributes,
    exchange: (trace: Trace) => Promise<unknown>,
  ): Promise<unknown> {
    const api = await otel();
    if (api === null) return exchange({});
    return inSpan(api, kind, traced, exchange, (answer) => answerAttributes(kind, answer));
  }

  /** The same request (one Idempotency-Key) until an answer that is final; `trace`: the
   * caller's W3C headers, on every attempt. */
  private async exchange(
    method: string,
    path: string,
    body: object | undefined,
    trace: Trace,
  ): Promise<unknown> {
    const headers: Record<string, string> = { ...trace, authorization: this.auth };
    if (body !== undefined) {
      headers["content-type"] = "application/json";
      headers["idempotency-key"] = `"${randomUUID()}"`;
    }
    const payload = body === undefined ? undefined : JSON.stringify(body);
    let last: LedgerError = new LedgerTimeoutError(`${method} ${path}: no attempt`, "timeout");
    for (let attempt = 1; attempt <= this.attempts; attempt += 1) {
      if (attempt > 1) await sleep(Math.min(100 * 2 ** attempt, 2_000));
      let response: Response;
      try {
        response = await this.fetcher(`${this.url}${path}`, {
          method,
          headers,
          body: payload,
          signal: AbortSignal.timeout(this.attemptTimeoutMs),
        });
      } catch (error) {
        // No answer: the request may or may not have reached the log; the same key is safe.
        last = noAnswer(method, `${this.url}${path}`, error);
        continue;
      }
      const answer: unknown = await response.json().catch(() => null);
      if (response.ok) return answer;
      last = errorOf(response.status, answer);
      const again = RETRIED.has(response.status) && (response.status !== 409 || last.code === RETRIED_409);
      if (!again) throw last;
    }
    throw last;
  }
}

/** The base URL of `serve`, checked before anything is sent. */
function serveUrl(given: string | undefined): string {
  const hint = "pass `url` or set ONCELOG_URL to oncelog serve's address, e.g. http://127.0.0.1:8765";
  if (!given) throw new ConfigurationError(`no server URL: ${hint}`);
  let parsed: URL;
  try {
    parsed = new URL(given);
  } catch {
    throw new ConfigurationError(`${JSON.stringify(given)} is not a URL: ${hint}`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new ConfigurationError(`${JSON.stringify(given)} is not an http(s) URL: ${hint}`);
  }
  return given.replace(/\/+$/, "");
}

/** The error of an attempt that got no answer: our own time limit, or no connection. */
function noAnswer(method: string, target: string, error: unknown): LedgerError {
  const name = error instanceof Error ? error.name : "";
  if (name === "TimeoutError" || name === "AbortError") {
    return new LedgerTimeoutError(`${method} ${target}: no answer in time (${String(error)})`, "timeout");
  }
  const cause = error instanceof Error ? (error.cause as { code?: unknown } | undefined) : undefined;
  const why = typeof cause?.code === "string" ? cause.code : String(error);
  return new ServeUnreachableError(
    `${method} ${target}: cannot connect (${why}); is oncelog serve running there?`,
    "serve_unreachable",
  );
}

/** The identity of an operation, as a span's attributes. */
function identity(channelId: string, keyName: string): Attributes {
  return {
    "oncelog.channel_id": channelId,
    "oncelog.key_name": keyName,
    "oncelog.operation_id": operationId(channelId, keyName),
  };
}
