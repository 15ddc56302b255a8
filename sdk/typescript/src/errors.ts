// The typed errors of the SDK: one hierarchy, each with oncelog's stable `code` (the same
// codes as Python's oncelog.errors), built from the API's RFC 9457 problem details.

/** Root of every error the SDK throws: `code` is stable and machine-readable. */
export class LedgerError extends Error {
  readonly code: string;
  /** The HTTP status of the answer (0 when no answer came). */
  readonly status: number;

  constructor(message: string, code = "ledger_error", status = 0) {
    super(`[${code}] ${message}`);
    this.name = new.target.name;
    this.code = code;
    this.status = status;
  }
}

/** A wrong argument: thrown before any request is sent (or a 400 from the server). */
export class InvalidArgumentError extends LedgerError {
  constructor(message: string, code = "invalid_argument", status = 400) {
    super(message, code, status);
  }
}

/** Same operation, different content: never a second record. */
export class ConflictError extends LedgerError {}
/** The claim token is not (or no longer) the holder: fenced. */
export class StaleClaimError extends LedgerError {}
/** The result was purged after retention; the key stays claimed forever. */
export class ResultExpiredError extends LedgerError {}
/** The operation failed for good (not retryable). */
export class ExecutionFailedError extends LedgerError {}
/** The tool ran (its effect happened) but its result cannot be recorded (not JSON, over
 * 1 MiB, or a `resultEncoder` that threw): recorded as failed for good with this code, so a
 * retry throws this error and never runs the tool again. */
export class ResultUnrecordableError extends ExecutionFailedError {}
/** The request does not apply to the operation's state. */
export class InvalidStateError extends LedgerError {}
/** Another holder has a live lease on the operation. */
export class InProgressError extends LedgerError {}
/** The holder's lease was lost, or cancelled, while the tool ran. */
export class LeaseLostError extends LedgerError {}
/** A cancel was requested while the tool ran; the call was stopped. */
export class ExecutionCancelledError extends LeaseLostError {}
/** The write API was called without its bearer token, or with a wrong one. */
export class UnauthorizedError extends LedgerError {}
/** The execution is absent. */
export class NotFoundError extends LedgerError {}
/** A bounded wait ran out (no decision, or no answer from the server). */
export class LedgerTimeoutError extends LedgerError {}
/** No connection to `oncelog serve` at the client's URL (refused, unresolved, reset). */
export class ServeUnreachableError extends LedgerError {}
/** The client's configuration is missing or malformed (no URL, no token): thrown at once. */
export class ConfigurationError extends LedgerError {
  constructor(message: string, code = "invalid_configuration", status = 0) {
    super(message, code, status);
  }
}
/** What a pending approval names: the intent a person is asked to decide. */
export interface PendingApproval {
  executionId: string;
  channelId: string;
  keyName: string;
  requestHash: string;
}

/** A tool's call awaits a person's approval: nothing ran. Call again after the decision. */
export class ApprovalPendingError extends LedgerError {
  readonly pending: PendingApproval | null;

  constructor(message: string, code = "approval_pending", status = 409, pending: PendingApproval | null = null) {
    super(message, code, status);
    this.pending = pending;
  }
}
/** An approver denied the call's intent: terminal, the message carries the reason. */
export class ApprovalDeniedError extends LedgerError {}
/** Nobody approved or denied the intent by its deadline: terminal. */
export class ApprovalExpiredError extends LedgerError {}
/** A decision the intent does not take (its own worker, or not signed by a listed approver). */
export class ApprovalRefusedError extends LedgerError {}
/** An Idempotency-Key came back with another payload. */
export class IdempotencyKeyReusedError extends LedgerError {}
/** A request with this Idempotency-Key still waits for its decision. */
export class RequestInFlightError extends LedgerError {}

type ErrorClass = new (message: string, code: string, status: number) => LedgerError;

const BY_CODE: Record<string, ErrorClass> = {
  invalid_argument: InvalidArgumentError,
  non_canonical_json: InvalidArgumentError,
  conflict: ConflictError,
  stale_claim: StaleClaimError,
  result_expired: ResultExpiredError,
  execution_failed: ExecutionFailedError,
  result_unrecordable: ResultUnrecordableError,
  invalid_state: InvalidStateError,
  in_progress: InProgressError,
  lease_lost: LeaseLostError,
  cancelled: ExecutionCancelledError,
  unauthorized: UnauthorizedError,
  not_found: NotFoundError,
  timeout: LedgerTimeoutError,
  idempotency_key_reused: IdempotencyKeyReusedError,
  request_in_flight: RequestInFlightError,
  serve_unreachable: ServeUnreachableError,
  invalid_configuration: ConfigurationError,
  approval_pending: ApprovalPendingError,
  approval_denied: ApprovalDeniedError,
  approval_expired: ApprovalExpiredError,
  approval_refused: ApprovalRefusedError,
};

/** The typed error of an error answer (a problem+json body, or whatever came). */
export function errorOf(status: number, body: unknown): LedgerError {
  const problem = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>;
  const code = typeof problem["code"] === "string" ? problem["code"] : "ledger_error";
  const detail = typeof problem["detail"] === "string" ? problem["detail"] : `HTTP ${status}`;
  const Kind = BY_CODE[code] ?? LedgerError;
  return new Kind(detail, code, status);
}
