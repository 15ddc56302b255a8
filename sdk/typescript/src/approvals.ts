// A tool's approval rule, like Python's RequireApproval: which calls need a person's yes,
// and how the caller waits for it. A call the rule selects carries an approval policy on its
// claim; the ledger records the intent instead of a grant and answers `awaiting_approval`.
// A person decides (the approvals page, `oncelog approvals`, or POST /v1/approvals/...);
// the next claim then runs the tool (approved) or throws ApprovalDeniedError with the reason.
import { setTimeout as sleep } from "node:timers/promises";

import type { ApprovalPolicy } from "./client.js";
import { ApprovalPendingError, InvalidArgumentError } from "./errors.js";
import type { Json } from "./identity.js";
import type { Claim } from "./results.js";

/** Which calls of a tool need a person's yes, and how `runTool` waits for it. */
export interface ApprovalRule {
  /** Calls with these params need approval (default: every call). */
  when?: (params: Record<string, Json>) => boolean;
  /** The intent expires (approval_expired) this long after it is recorded (default a day). */
  timeoutSeconds?: number;
  /** May the requesting worker approve its own intent (default false)? */
  selfApproval?: boolean;
  /** `raise` (default): ApprovalPendingError at once; `wait`: claim again every `pollSeconds`
   * up to `waitTimeoutSeconds`, then ApprovalPendingError. */
  onPending?: "raise" | "wait";
  waitTimeoutSeconds?: number;
  pollSeconds?: number;
}

const DAY_S = 24 * 3600;

/** The claim's policy for a call with `params` under `rule`, or undefined (none needed). */
export function policyFor(
  rule: ApprovalRule | undefined,
  params: Record<string, Json>,
): ApprovalPolicy | undefined {
  if (rule === undefined) return undefined;
  if (rule.onPending !== undefined && rule.onPending !== "raise" && rule.onPending !== "wait") {
    throw new InvalidArgumentError("onPending must be 'raise' or 'wait'");
  }
  if (rule.when !== undefined && !rule.when(params)) return undefined;
  return { timeoutSeconds: rule.timeoutSeconds ?? DAY_S, selfApproval: rule.selfApproval ?? false };
}

/** The typed pending state of a claim answered `awaiting_approval`. */
export function pendingError(claim: Claim, waited = ""): ApprovalPendingError {
  const ex = claim.execution;
  return new ApprovalPendingError(
    `call ${JSON.stringify(ex.keyName)} of ${JSON.stringify(ex.channelId)} (execution ${ex.id}) ` +
      `awaits a person's approval${waited}: approve or deny it, then call again`,
    "approval_pending",
    409,
    { executionId: ex.id, channelId: ex.channelId, keyName: ex.keyName, requestHash: ex.requestHash },
  );
}

/** Claim until the intent is decided (`wait`) or at once throw its pending state (`raise`). */
export async function untilDecided(
  rule: ApprovalRule,
  claimAgain: () => Promise<Claim>,
  first: Claim,
): Promise<Claim> {
  const waitS = rule.waitTimeoutSeconds ?? 300;
  const giveUpAt = Date.now() + waitS * 1000;
  let claim = first;
  while (claim.status === "awaiting_approval") {
    const left = giveUpAt - Date.now();
    if ((rule.onPending ?? "raise") === "raise") throw pendingError(claim);
    if (left <= 0) throw pendingError(claim, ` after waiting ${waitS}s`);
    await sleep(Math.min((rule.pollSeconds ?? 1) * 1000, left));
    claim = await claimAgain();
  }
  return claim;
}
