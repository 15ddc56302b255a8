// The tool executor, like Python's run_tool: claim -> (reconcile) -> run -> complete or fail,
// under a heartbeat every lease/3; a lost lease or a cancel stops the call.
import { setTimeout as sleep } from "node:timers/promises";

import { type ApprovalRule, policyFor, untilDecided } from "./approvals.js";
import type { ClaimArgs, LedgerClient } from "./client.js";
import {
  ExecutionCancelledError,
  InProgressError,
  InvalidArgumentError,
  InvalidStateError,
  LeaseLostError,
  LedgerError,
  LedgerTimeoutError,
  StaleClaimError,
} from "./errors.js";
import type { Json } from "./identity.js";
import { type Unrecordable, recordedText, refusal, unrecordable, unrecordableError } from "./recordable.js";
import type { Claim, ClaimStatus, Execution, PreviousAttempt } from "./results.js";

/** What a tool and a reconcile hook get: the identity to pass downstream, and a signal
 * that aborts when the lease is lost or a cancel is requested. */
export interface ToolContext {
  execution: Execution;
  /** Pass this downstream (e.g. as an Idempotency-Key header). */
  idempotencyKey: string;
  /** The fencing token to pass downstream. */
  epoch: number;
  /** On a reclaim: the superseded attempt. */
  previous: PreviousAttempt | null;
  /** Aborted on a lost lease or a cancel: stop, and pass it to fetch() and the like. */
  signal: AbortSignal;
}

/** What `runTool` takes: `claimExecution`'s arguments, the tool, and its policies. */
export interface RunToolArgs<R extends Json> extends ClaimArgs {
  fn: (ctx: ToolContext) => Promise<R>;
  /** On a reclaim, runs first: the downstream's result of the previous attempt, or null
   * when it never saw it (then `fn` runs). Completes with `reconciled` found/not_found. */
  reconcile?: (previous: PreviousAttempt, ctx: ToolContext) => Promise<R | null>;
  /** `raise` (default): an `InProgressError`; `wait`: claim again once the lease lapses. */
  onInProgress?: "raise" | "wait";
  waitTimeoutSeconds?: number;
  /** Turns what the tool (or the reconcile hook) returned into the JSON to record, e.g.
   * `jsonable` for Dates. A result that still cannot be recorded (not JSON, over 1 MiB) is
   * recorded as a `result_unrecordable` failure and thrown as `ResultUnrecordableError`. */
  resultEncoder?: (result: unknown) => Json;
  /** Whether a failure may be retried at once (default: its boolean `retryable`, else a
   * TimeoutError or a connection error). */
  retryable?: (error: unknown) => boolean;
  /** Which calls need a person's yes first, and how to wait for it (`approvals.ts`). */
  requireApproval?: ApprovalRule;
}

/** What `runTool` returns. */
export interface ToolRun<R extends Json> {
  result: R;
  status: ClaimStatus;
  execution: Execution;
  /** How a previous attempt was settled: found, not_found, or null (nothing reconciled). */
  reconciled: "found" | "not_found" | null;
  previous: PreviousAttempt | null;
}

const LAPSE_MARGIN_MS = 50;
const MIN_POLL_MS = 100;
const MAX_ERROR_CHARS = 4000;

/** Run `args.fn` at most once per idempotency key through the ledger. */
export async function runTool<R extends Json>(
  client: LedgerClient,
  args: RunToolArgs<R>,
): Promise<ToolRun<R>> {
  const claim = await claimUntilHeld(client, args);
  if (claim.status === "replayed") {
    const result = claim.result as R;
    return { result, status: claim.status, execution: claim.execution, reconciled: null, previous: null };
  }
  const token = claim.claimToken;
  if (token === null) throw new LedgerError("an owned claim came without its token");
  const stop = new Stop();
  const ctx: ToolContext = {
    execution: claim.execution,
    idempotencyKey: claim.execution.idempotencyKey,
    epoch: claim.execution.epoch,
    previous: claim.previous,
    signal: stop.controller.signal,
  };
  const finished = new AbortController();
  const beat = heartbeats(client, claim, token, args.leaseSeconds ?? 60, stop, finished.signal);
  let outcome: { result: R; reconciled: ToolRun<R>["reconciled"] } | { error: unknown };
  try {
    const running = work(args, ctx);
    running.catch(() => undefined); // after a stop it settles unobserved: not unhandled
    outcome = await Promise.race([running, stop.stopped]);
  } catch (error) {
    outcome = { error };
  } finally {
    finished.abort();
    await beat;
  }
  const execution = claim.execution;
  if ("error" in outcome) return settleError(client, execution, token, stop, outcome.error, args);
  const how = outcome.reconciled === null ? {} : { reconciled: outcome.reconciled };
  const [result, refused] = encoded(args, outcome.result);
  if (refused !== null) return settleUnrecordable(client, execution, token, refused, how);
  let recorded: Execution;
  try {
    recorded = await client.completeExecution(execution, token, result, how);
  } catch (error) {
    if (error instanceof StaleClaimError) {
      throw new LeaseLostError(
        `execution ${execution.id}: the lease was lost and another worker reclaimed it; ` +
          "this result was recorded as duplicate_effect_suspected",
        "lease_lost",
      );
    }
    // Ids and token came from the claim: only the result can be refused here.
    if (error instanceof InvalidArgumentError) {
      const why = unrecordable(result) ?? refusal(result, error.message);
      return settleUnrecordable(client, execution, token, why, how);
    }
    throw error;
  }
  return {
    result: recorded.result as R,
    status: claim.status,
    execution: recorded,
    reconciled: outcome.reconciled,
    previous: claim.previous,
  };
}

/** The result as `args.resultEncoder` makes it, checked: or why it cannot be recorded. */
function encoded<R extends Json>(args: RunToolArgs<R>, result: R): [Json, Unrecordable | null] {
  let value: unknown = result;
  if (args.resultEncoder !== undefined) {
    try {
      value = args.resultEncoder(result);
    } catch (error) {
      return [null, refusal(result, `resultEncoder threw ${errorName(error)}: ${errorMessage(error)}`)];
    }
  }
  return [value as Json, unrecordable(value)];
}

/** The tool ran and its result cannot be recorded: record a failure for good rather than
 * leave the step claimed, whose retry would run the tool again (docs/spec.md section 5). */
async function settleUnrecordable(
  client: LedgerClient,
  execution: Execution,
  token: string,
  refused: Unrecordable,
  how: { reconciled?: "found" | "not_found" },
): Promise<never> {
  let notRecorded: string | null = null;
  try {
    await client.failExecution(execution, token, recordedText(refused), { retryable: false, ...how });
  } catch (error) {
    notRecorded = String(error);
  }
  throw unrecordableError(execution.id, refused, notRecorded);
}

async function work<R extends Json>(
  args: RunToolArgs<R>,
  ctx: ToolContext,
): Promise<{ result: R; reconciled: "found" | "not_found" | null }> {
  if (args.reconcile !== undefined && ctx.previous !== null) {
    const known = await args.reconcile(ctx.previous, ctx);
    if (known !== null) return { result: known, reconciled: "found" };
    return { result: await args.fn(ctx), reconciled: "not_found" };
  }
  return { result: await args.fn(ctx), reconciled: null };
}

async function claimUntilHeld<R extends Json>(client: LedgerClient, args: RunToolArgs<R>): Promise<Claim> {
  const giveUpAt = Date.now() + (args.waitTimeoutSeconds ?? 300) * 1000;
  const rule = args.requireApproval;
  const approval = policyFor(rule, args.params);
  const claimArgs = approval === undefined ? args : { ...args, approval };
  for (;;) {
    let claim = await client.claimExecution(claimArgs);
    if (rule !== undefined && claim.status === "awaiting_approval") {
      claim = await untilDecided(rule, () => client.claimExecution(claimArgs), claim);
    }
    if (claim.status !== "in_progress") return claim;
    const id = claim.execution.id;
    if ((args.onInProgress ?? "raise") === "raise") {
      throw new InProgressError(
        `execution ${id} is held by ${claim.holder} until ${claim.leaseDeadlineMs}`,
        "in_progress",
        409,
      );
    }
    const left = giveUpAt - Date.now();
    if (left <= 0) {
      throw new LedgerTimeoutError(`execution ${id} still held by ${claim.holder}`, "timeout");
    }
    // Leases are judged in log time (the broker's clock); the local clock stands in for it.
    const lapse = (claim.leaseDeadlineMs ?? 0) - Date.now() + LAPSE_MARGIN_MS;
    await sleep(Math.min(Math.max(lapse, MIN_POLL_MS), left));
  }
}

/** Why the tool must stop; the first cause wins. */
class Stop {
  readonly controller = new AbortController();
  cancelled = false;
  reason: string | null = null;
  private reject: (error: unknown) => void = () => undefined;
  /** Rejects once set: raced against the tool. */
  readonly stopped: Promise<never> = new Promise((_, reject) => {
    this.reject = reject;
  });

  constructor() {
    this.stopped.catch(() => undefined); // raced, or never looked at: not unhandled
  }

  set(cancelled: boolean, reason: string | null): void {
    if (this.controller.signal.aborted) return;
    this.cancelled = cancelled;
    this.reason = reason;
    this.controller.abort();
    this.reject(new StopSignalled());
  }

  error(executionId: string): LeaseLostError {
    if (this.cancelled) {
      return new ExecutionCancelledError(
        `execution ${executionId} was cancelled while the tool ran (reason=${this.reason})`,
        "cancelled",
      );
    }
    return new LeaseLostError(
      `execution ${executionId}: lease lost while the tool ran: ${this.reason}`,
      "lease_lost",
    );
  }
}

class StopSignalled extends Error {}

async function heartbeats(
  client: LedgerClient,
  claim: Claim,
  token: string,
  leaseSeconds: number,
  stop: Stop,
  finished: AbortSignal,
): Promise<void> {
  let deadlineMs = claim.execution.leaseDeadlineMs;
  for (;;) {
    try {
      await sleep((leaseSeconds * 1000) / 3, undefined, { signal: finished });
    } catch {
      return; // the tool finished
    }
    try {
      // Not cut short at our deadline: a heartbeat appended in time keeps the lease even
      // when its answer comes late.
      const beat = await client.heartbeatExecution(claim.execution, token);
      deadlineMs = beat.leaseDeadlineMs;
      if (beat.cancelRequested) {
        stop.set(true, beat.cancelReason);
        return;
      }
    } catch (error) {
      if (error instanceof StaleClaimError || error instanceof InvalidStateError) {
        stop.set(false, String(error));
        return;
      }
      // A heartbeat that failed outright proves nothing until our known deadline passed.
      if (Date.now() >= deadlineMs) {
        stop.set(false, `no heartbeat confirmed before the deadline: ${String(error)}`);
        return;
      }
    }
  }
}

async function settleError<R extends Json>(
  client: LedgerClient,
  execution: Execution,
  token: string,
  stop: Stop,
  error: unknown,
  args: RunToolArgs<R>,
): Promise<never> {
  if (stop.controller.signal.aborted) {
    const stopped = stop.error(execution.id);
    if (stop.cancelled) {
      // Not retryable: a reclaim clears the cancel flag, so a release would let the next
      // automatic retry silently undo the cancel.
      await record(client, execution, token, `cancelled: ${stop.reason}`, false);
    }
    throw stopped;
  }
  const text = `${errorName(error)}: ${errorMessage(error)}`.slice(0, MAX_ERROR_CHARS);
  await record(client, execution, token, text, (args.retryable ?? isRetryable)(error));
  throw error;
}

async function record(
  client: LedgerClient,
  execution: Execution,
  token: string,
  text: string,
  retryable: boolean,
): Promise<void> {
  try {
    await client.failExecution(execution, token, text, { retryable });
  } catch {
    // The caller's error is what matters; the lease lapses and the next claimer reconciles.
  }
}

function isRetryable(error: unknown): boolean {
  if (typeof error === "object" && error !== null) {
    const flag = (error as { retryable?: unknown }).retryable;
    if (typeof flag === "boolean") return flag;
    const code = (error as { code?: unknown }).code;
    if (typeof code === "string" && code.startsWith("ECONN")) return true;
  }
  return error instanceof Error && error.name === "TimeoutError";
}

function errorName(error: unknown): string {
  return error instanceof Error ? error.name : typeof error;
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
