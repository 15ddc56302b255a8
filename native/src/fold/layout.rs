//! Where the fold finds things in the models: each NamedTuple's field positions, each body's
//! fields, each enum's members in order, and the rules' constants. `model` checks every
//! list here against `oncelog.schemas.models` at import.

// --- NamedTuple fields, by position -----------------------------------------------------

#[rustfmt::skip]
pub const STATE_FIELDS: [&str; N_STATE] = [
    "operation_id", "channel_id", "key_name", "status", "version", "epoch", "request_hash",
    "tool_name", "params", "effect", "lease_ms", "retention_ms", "token_fp", "worker_id",
    "claimed_at_ms", "lease_deadline_ms", "last_heartbeat_ms", "cancel_requested",
    "cancel_reason", "result", "result_hash", "completed_at_ms", "expires_at_ms", "error",
    "retryable", "released", "previous", "recent", "updated_at_ms", "inherited", "approval",
];
pub const N_STATE: usize = 31;
pub const S_OPERATION_ID: usize = 0;
pub const S_CHANNEL_ID: usize = 1;
pub const S_KEY_NAME: usize = 2;
pub const S_STATUS: usize = 3;
pub const S_VERSION: usize = 4;
pub const S_EPOCH: usize = 5;
pub const S_REQUEST_HASH: usize = 6;
pub const S_TOOL_NAME: usize = 7;
pub const S_PARAMS: usize = 8;
pub const S_EFFECT: usize = 9;
pub const S_LEASE_MS: usize = 10;
pub const S_RETENTION_MS: usize = 11;
pub const S_TOKEN_FP: usize = 12;
pub const S_WORKER_ID: usize = 13;
pub const S_CLAIMED_AT_MS: usize = 14;
pub const S_LEASE_DEADLINE_MS: usize = 15;
pub const S_LAST_HEARTBEAT_MS: usize = 16;
pub const S_CANCEL_REQUESTED: usize = 17;
pub const S_CANCEL_REASON: usize = 18;
pub const S_RESULT: usize = 19;
pub const S_RESULT_HASH: usize = 20;
pub const S_COMPLETED_AT_MS: usize = 21;
pub const S_EXPIRES_AT_MS: usize = 22;
pub const S_ERROR: usize = 23;
pub const S_RETRYABLE: usize = 24;
pub const S_RELEASED: usize = 25;
pub const S_PREVIOUS: usize = 26;
pub const S_RECENT: usize = 27;
pub const S_UPDATED_AT_MS: usize = 28;
pub const S_INHERITED: usize = 29;
pub const S_APPROVAL: usize = 30;

#[rustfmt::skip]
pub const DECISION_FIELDS: [&str; N_DECISION] = [
    "request_id", "operation_id", "kind", "outcome", "changed", "log_time_ms", "state", "epoch",
    "retried", "stored_hash", "request_hash", "result", "error", "duplicate_effect_suspected",
    "previous", "source_partition", "source_offset",
];
pub const N_DECISION: usize = 17;
pub const D_RETRIED: usize = 8;
pub const D_STORED_HASH: usize = 9;
pub const D_REQUEST_HASH: usize = 10;
pub const D_RESULT: usize = 11;
pub const D_ERROR: usize = 12;
pub const D_SUSPECTED: usize = 13;
pub const D_PREVIOUS: usize = 14;

#[rustfmt::skip]
pub const REQUEST_FIELDS: [&str; N_REQUEST] = [
    "request_id", "operation_id", "channel_id", "key_name", "claim_token", "body",
    "reply_partition", "reconciled", "approval",
];
pub const N_REQUEST: usize = 9;
pub const Q_REQUEST_ID: usize = 0;
pub const Q_OPERATION_ID: usize = 1;
pub const Q_CHANNEL_ID: usize = 2;
pub const Q_KEY_NAME: usize = 3;
pub const Q_CLAIM_TOKEN: usize = 4;
pub const Q_BODY: usize = 5;
pub const Q_APPROVAL: usize = 8;

#[rustfmt::skip]
pub const RECENT_FIELDS: [&str; N_RECENT] =
    ["request_id", "outcome", "epoch", "token_fp", "payload_fp", "log_time_ms", "worker_id"];
pub const N_RECENT: usize = 7;
pub const R_REQUEST_ID: usize = 0;
pub const R_OUTCOME: usize = 1;
pub const R_EPOCH: usize = 2;
pub const R_TOKEN_FP: usize = 3;
pub const R_PAYLOAD_FP: usize = 4;
pub const R_LOG_TIME_MS: usize = 5;

#[rustfmt::skip]
pub const PREVIOUS_FIELDS: [&str; N_PREVIOUS] = [
    "epoch", "token_fp", "worker_id", "claimed_at_ms", "last_heartbeat_ms", "status", "error",
    "outcome_unknown",
];
pub const N_PREVIOUS: usize = 8;
pub const P_TOKEN_FP: usize = 1;

pub const INHERITANCE_FIELDS: [&str; N_INHERITANCE] =
    ["from_channel", "from_partition", "from_offset", "adopted"];
pub const N_INHERITANCE: usize = 4;

#[rustfmt::skip]
pub const APPROVAL_FIELDS: [&str; N_APPROVAL] = [
    "requested_at_ms", "deadline_ms", "requested_by", "self_approval", "approved", "decided_by",
    "decided_at_ms", "reason", "approvers",
];
pub const N_APPROVAL: usize = 9;
pub const A_REQUESTED_AT_MS: usize = 0;
pub const A_DEADLINE_MS: usize = 1;
pub const A_REQUESTED_BY: usize = 2;
pub const A_SELF_APPROVAL: usize = 3;
pub const A_APPROVED: usize = 4;
pub const A_DECIDED_BY: usize = 5;
pub const A_DECIDED_AT_MS: usize = 6;
pub const A_REASON: usize = 7;
pub const A_APPROVERS: usize = 8;

pub const POLICY_FIELDS: [&str; N_POLICY] = ["timeout_ms", "self_approval", "approvers"];
pub const N_POLICY: usize = 3;
pub const PO_TIMEOUT_MS: usize = 0;
pub const PO_SELF_APPROVAL: usize = 1;
pub const PO_APPROVERS: usize = 2;

// --- request bodies: slotted dataclasses, in the Kind enum's order ------------------------

pub const N_BODIES: usize = 11;
pub const BODY_NAMES: [&str; N_BODIES] = [
    "Claim",
    "Heartbeat",
    "Complete",
    "Fail",
    "Release",
    "Cancel",
    "Sweep",
    "Get",
    "Inherit",
    "Approve",
    "Deny",
];
pub const B_CLAIM: usize = 0;
pub const B_HEARTBEAT: usize = 1;
pub const B_COMPLETE: usize = 2;
pub const B_FAIL: usize = 3;
pub const B_RELEASE: usize = 4;
pub const B_CANCEL: usize = 5;
pub const B_SWEEP: usize = 6;
pub const B_GET: usize = 7;
pub const B_INHERIT: usize = 8;
pub const B_APPROVE: usize = 9;
pub const B_DENY: usize = 10;

/// Each body's fields, in the dataclass's order (a field's index is its slot's index).
#[rustfmt::skip]
pub const BODY_FIELDS: [&[&str]; N_BODIES] = [
    &["tool_name", "params", "request_hash", "lease_ms", "retention_ms", "effect", "worker_id"],
    &["lease_ms"],
    &["result"],
    &["error", "retryable"],
    &[],
    &["reason"],
    &[],
    &[],
    &["from_channel", "from_partition", "from_offset", "tool_name", "params", "request_hash",
      "effect", "result", "retention_ms", "adopted"],
    &["approver", "request_hash", "signature"],
    &["approver", "request_hash", "reason", "signature"],
];
pub const C_TOOL_NAME: usize = 0;
pub const C_PARAMS: usize = 1;
pub const C_REQUEST_HASH: usize = 2;
pub const C_LEASE_MS: usize = 3;
pub const C_RETENTION_MS: usize = 4;
pub const C_EFFECT: usize = 5;
pub const C_WORKER_ID: usize = 6;
pub const HB_LEASE_MS: usize = 0;
pub const CO_RESULT: usize = 0;
pub const F_ERROR: usize = 0;
pub const F_RETRYABLE: usize = 1;
pub const CA_REASON: usize = 0;
pub const I_FROM_CHANNEL: usize = 0;
pub const I_FROM_PARTITION: usize = 1;
pub const I_FROM_OFFSET: usize = 2;
pub const I_TOOL_NAME: usize = 3;
pub const I_PARAMS: usize = 4;
pub const I_REQUEST_HASH: usize = 5;
pub const I_EFFECT: usize = 6;
pub const I_RESULT: usize = 7;
pub const I_RETENTION_MS: usize = 8;
pub const I_ADOPTED: usize = 9;
/// Approve's and Deny's first fields (the same positions in both).
pub const AD_APPROVER: usize = 0;
pub const AD_REQUEST_HASH: usize = 1;
pub const DE_REASON: usize = 2;

// --- enums: the members' values, in definition order (a name is its value, upper-cased) ---

pub const STATUS_VALUES: [&str; 7] =
    ["CLAIMED", "COMPLETED", "FAILED", "EXPIRED", "AWAITING_APPROVAL", "APPROVED", "DENIED"];
pub const ST_CLAIMED: usize = 0;
pub const ST_COMPLETED: usize = 1;
pub const ST_FAILED: usize = 2;
pub const ST_EXPIRED: usize = 3;
pub const ST_AWAITING_APPROVAL: usize = 4;
pub const ST_APPROVED: usize = 5;
pub const ST_DENIED: usize = 6;

pub const EFFECT_VALUES: [&str; 2] = ["pure", "external"];
pub const E_EXTERNAL: usize = 1;

pub const KIND_VALUES: [&str; N_BODIES] = [
    "claim",
    "heartbeat",
    "complete",
    "fail",
    "release",
    "cancel",
    "sweep",
    "get",
    "inherit",
    "approve",
    "deny",
];

#[rustfmt::skip]
pub const OUTCOME_VALUES: [&str; 25] = [
    "claimed", "reclaimed", "in_progress", "replayed", "conflict", "result_expired", "failed",
    "heartbeat_ok", "completed", "stale_claim", "released", "cancel_requested", "expired",
    "invalid_request", "state_absent", "state_claimed", "state_completed", "state_failed",
    "state_expired", "inherited", "awaiting_approval", "approved", "denied", "approval_expired",
    "approval_refused",
];
pub const O_CLAIMED: usize = 0;
pub const O_RECLAIMED: usize = 1;
pub const O_IN_PROGRESS: usize = 2;
pub const O_REPLAYED: usize = 3;
pub const O_CONFLICT: usize = 4;
pub const O_RESULT_EXPIRED: usize = 5;
pub const O_FAILED: usize = 6;
pub const O_HEARTBEAT_OK: usize = 7;
pub const O_COMPLETED: usize = 8;
pub const O_STALE_CLAIM: usize = 9;
pub const O_RELEASED: usize = 10;
pub const O_CANCEL_REQUESTED: usize = 11;
pub const O_EXPIRED: usize = 12;
pub const O_INVALID_REQUEST: usize = 13;
pub const O_STATE_ABSENT: usize = 14;
pub const O_STATE_CLAIMED: usize = 15;
pub const O_STATE_COMPLETED: usize = 16;
pub const O_STATE_FAILED: usize = 17;
pub const O_STATE_EXPIRED: usize = 18;
pub const O_INHERITED: usize = 19;
pub const O_AWAITING_APPROVAL: usize = 20;
pub const O_APPROVED: usize = 21;
pub const O_DENIED: usize = 22;
pub const O_APPROVAL_EXPIRED: usize = 23;
pub const O_APPROVAL_REFUSED: usize = 24;

/// The outcome naming each status, by the status's index: the answer of the table's "any
/// other pair" row (docs/spec.md §4).
pub const OUTCOME_OF_STATUS: [usize; 7] = [
    O_STATE_CLAIMED,
    O_STATE_COMPLETED,
    O_STATE_FAILED,
    O_STATE_EXPIRED,
    O_AWAITING_APPROVAL,
    O_APPROVED,
    O_DENIED,
];

// --- the rules' constants -----------------------------------------------------------------

/// How long (in log time) a state remembers a request id, grants aside: one that changed it,
/// or a claim it answered `in_progress`.
///
/// A client re-sends one request for at most its total call timeout (the SDK caps it at
/// 300 s), and a re-send may sit in the producer for at most librdkafka's
/// `message.timeout.ms` (300 s by default) before it is appended: 600 s in all, inside this
/// window. The id that won each grant is kept for the life of the state, whatever its age
/// (docs/spec.md §4).
pub const RETRY_MEMORY_MS: i64 = 15 * 60 * 1000;
/// Hex digits of a request body's fingerprint in the retry memory: a compact stand-in for
/// what the request asks for, kept with each remembered id to tell a retry from an id reused
/// with another payload (`verdicts::payload_fingerprint`).
pub const PAYLOAD_FP_HEX: usize = 16;
/// Hex digits of a token's fingerprint: 128 bits, as many as a token has
/// (`oncelog.identity.tokens.TOKEN_FP_HEX`, checked at import).
pub const TOKEN_FP_HEX: usize = 32;
/// An `approval_refused`'s errors: a decision not signed by an approver the intent lists, and
/// one by the requesting worker where the policy does not allow it (docs/spec.md §4,
/// "Approvals").
pub const UNSIGNED: &str = "not signed by an approver the intent lists";
pub const SELF_APPROVAL: &str = "the requesting worker may not approve its own intent";
