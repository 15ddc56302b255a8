// What the SDK hands back: executions, claims and heartbeats, read from the API's JSON.
import type { Json } from "./identity.js";

/** One operation as the ledger decided it. */
export interface Execution {
  id: string;
  channelId: string;
  keyName: string;
  toolName: string;
  params: Record<string, Json>;
  requestHash: string;
  /** Pass this downstream (an Idempotency-Key header, a payment provider's key). */
  idempotencyKey: string;
  /** The fencing token: grows by one at every grant. */
  epoch: number;
  status: "claimed" | "completed" | "failed" | "expired";
  workerId: string;
  leaseDeadlineMs: number;
  cancelRequested: boolean;
  result: Json;
  resultHash: string | null;
  completedAtMs: number | null;
  expiresAtMs: number | null;
  error: string | null;
}

/** The attempt a grant superseded: what to reconcile with. */
export interface PreviousAttempt {
  epoch: number;
  /** A fingerprint of its claim token, never the token. */
  tokenFp: string;
  workerId: string;
  claimedAtMs: number;
  lastHeartbeatMs: number | null;
  status: string;
  error: string | null;
}

export type ClaimStatus = "claimed" | "reclaimed" | "in_progress" | "replayed" | "awaiting_approval";

/** The answer to `claimExecution`. */
export interface Claim {
  status: ClaimStatus;
  execution: Execution;
  /** Only on claimed/reclaimed: the capability to heartbeat, complete, fail or release. */
  claimToken: string | null;
  /** On replayed: the recorded result. */
  result: Json;
  /** On in_progress: who holds the lease, and until when (log time, ms). */
  holder: string | null;
  leaseDeadlineMs: number | null;
  /** On reclaimed: the superseded attempt. */
  previous: PreviousAttempt | null;
  /** True when this claim holds the lease. */
  owned: boolean;
}

/** The answer to a heartbeat. */
export interface Heartbeat {
  leaseDeadlineMs: number;
  cancelRequested: boolean;
  cancelReason: string | null;
}

type Fields = Record<string, unknown>;

/** An Execution from the API's JSON. */
export function executionOf(json: unknown): Execution {
  const e = json as Fields;
  return {
    id: e["id"] as string,
    channelId: e["channel_id"] as string,
    keyName: e["key_name"] as string,
    toolName: e["tool_name"] as string,
    params: e["params"] as Record<string, Json>,
    requestHash: e["request_hash"] as string,
    idempotencyKey: e["idempotency_key"] as string,
    epoch: e["epoch"] as number,
    status: e["status"] as Execution["status"],
    workerId: e["worker_id"] as string,
    leaseDeadlineMs: e["lease_deadline_ms"] as number,
    cancelRequested: e["cancel_requested"] as boolean,
    result: (e["result"] ?? null) as Json,
    resultHash: (e["result_hash"] ?? null) as string | null,
    completedAtMs: (e["completed_at_ms"] ?? null) as number | null,
    expiresAtMs: (e["expires_at_ms"] ?? null) as number | null,
    error: (e["error"] ?? null) as string | null,
  };
}

function previousOf(json: unknown): PreviousAttempt | null {
  if (json === null || json === undefined) return null;
  const p = json as Fields;
  return {
    epoch: p["epoch"] as number,
    tokenFp: p["token_fp"] as string,
    workerId: p["worker_id"] as string,
    claimedAtMs: p["claimed_at_ms"] as number,
    lastHeartbeatMs: (p["last_heartbeat_ms"] ?? null) as number | null,
    status: p["status"] as string,
    error: (p["error"] ?? null) as string | null,
  };
}

/** A Claim from the API's JSON. */
export function claimOf(json: unknown): Claim {
  const c = json as Fields;
  const status = c["status"] as ClaimStatus;
  return {
    status,
    execution: executionOf(c["execution"]),
    claimToken: (c["claim_token"] ?? null) as string | null,
    result: (c["result"] ?? null) as Json,
    holder: (c["holder"] ?? null) as string | null,
    leaseDeadlineMs: (c["lease_deadline_ms"] ?? null) as number | null,
    previous: previousOf(c["previous"]),
    owned: status === "claimed" || status === "reclaimed",
  };
}
