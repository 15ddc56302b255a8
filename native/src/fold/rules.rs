//! The per-kind rules of docs/spec.md §4: claims, heartbeats, completions, failures,
//! releases, cancels, sweeps and reads, and what a retried request is answered.

use super::approvals;
use super::model::*;
use super::tokens;
use super::values::{add, eq, gt, lt, ne, same_or_eq, sha256_hex, sha256_text, truthy};
use super::verdicts::*;
use crate::objects::{self, is_none, item, Fallible, Owned, P};
use pyo3::ffi;

/// A claim into an absent state: the operation's first grant, epoch 1. A claim without a
/// token is an `invalid_request`.
pub unsafe fn first_claim(cx: &Cx) -> Fallible<Owned> {
    let m = model();
    let token = cx.request(Q_CLAIM_TOKEN);
    if is_none(token) {
        return unchanged(ffi::Py_None(), cx, O_INVALID_REQUEST);
    }
    let fp = tokens::fingerprint(token)?;
    let payload = cx.payload_fingerprint()?;
    let worker = cx.field(C_WORKER_ID)?;
    let request_id = cx.request(Q_REQUEST_ID);
    let outcome = m.outcome[O_CLAIMED];
    let memo = objects::tuple_shared(
        m.recent,
        &[request_id, outcome, m.one, fp.ptr(), payload, cx.t, worker],
    )?;
    let recent = objects::plain_tuple(&[memo.ptr()])?;
    let request_hash = cx.field(C_REQUEST_HASH)?;
    let mut grant = Changes::new();
    grant_changes(cx, fp.ptr(), &mut grant)?;
    let mut values = vec![
        (S_OPERATION_ID, cx.request(Q_OPERATION_ID)),
        (S_CHANNEL_ID, cx.request(Q_CHANNEL_ID)),
        (S_KEY_NAME, cx.request(Q_KEY_NAME)),
        (S_VERSION, m.one),
        (S_EPOCH, m.one),
        (S_REQUEST_HASH, request_hash),
        (S_RECENT, recent.ptr()),
        (S_UPDATED_AT_MS, cx.t),
    ];
    values.extend((0..N_STATE).filter_map(|i| grant.get(i).map(|v| (i, v))));
    let state = first_state(&values)?;
    created(state, cx, O_CLAIMED, &NO_DETAIL)
}

/// A new grant over a lapsed (or released) or a retryable failed attempt: epoch + 1, and the
/// previous attempt kept in `previous` (docs/spec.md §4).
unsafe fn reclaim(state: P, cx: &Cx, fp: P) -> Fallible<Owned> {
    let m = model();
    // Still CLAIMED: the attempt neither completed nor failed. Unless it released, or its
    // step is pure, its effect may have happened and nobody heard: an unknown outcome.
    let unknown = status_is(state, ST_CLAIMED)
        && item(state, S_EFFECT) == m.effect[E_EXTERNAL]
        && !truthy(item(state, S_RELEASED))?;
    let f = |i: usize| item(state, i);
    let previous = [
        f(S_EPOCH),
        f(S_TOKEN_FP),
        f(S_WORKER_ID),
        f(S_CLAIMED_AT_MS),
        f(S_LAST_HEARTBEAT_MS),
        f(S_STATUS),
        f(S_ERROR),
        objects::bool_ptr(unknown),
    ];
    let previous = objects::tuple_shared(m.previous, &previous)?;
    let mut changes = Changes::new();
    grant_changes(cx, fp, &mut changes)?;
    changes.set(S_EPOCH, super::values::add_int(item(state, S_EPOCH), 1)?);
    changes.share(S_PREVIOUS, previous.ptr());
    let d = Detail { previous: previous.ptr(), ..NO_DETAIL };
    commit(state, cx, fp, O_RECLAIMED, changes, &d, None)
}

/// A claim against an existing state, its request hash the state's (`judge` answered a
/// conflict before). The holder's own token is answered `claimed`; another token waits while
/// the lease holds, and reclaims once it lapsed; a retryable failure is reclaimed at once;
/// anything else gets the state's answer without a grant.
pub unsafe fn on_claim(state: P, cx: &Cx, fp: P, max_step: P) -> Fallible<Owned> {
    let m = model();
    let status = item(state, S_STATUS);
    if is_none(cx.request(Q_CLAIM_TOKEN)) {
        return unchanged(state, cx, O_INVALID_REQUEST);
    }
    let undecided = |i: usize| i == ST_AWAITING_APPROVAL || i == ST_APPROVED || i == ST_DENIED;
    if member_in(status, &m.status, undecided, m.undecided)? {
        return approvals::claim_under_approval(state, cx, fp);
    }
    if status == m.status[ST_CLAIMED] {
        if eq(fp, item(state, S_TOKEN_FP))? {
            return unchanged(state, cx, O_CLAIMED);
        }
        // The clock-step grace (docs/spec.md §4, "Clock steps"): log time is the leader
        // broker's clock, and a step forward of it (NTP, a VM resumed, a new leader whose
        // clock runs ahead) lapses a lease its holder keeps heartbeating. So a lapsed lease
        // waits `max_step` more before a reclaim, unless it was released: the holder gave
        // it up, no clock decided that.
        let grace = if truthy(item(state, S_RELEASED))? { m.zero } else { max_step };
        let deadline = add(item(state, S_LEASE_DEADLINE_MS), grace)?;
        if lt(cx.t, deadline.ptr())? {
            // `in_progress`, remembered: a re-sent copy of this claim is answered the same.
            // The holder may release, fail or lapse before a copy is appended (its client
            // re-sends while the projector is down or behind); judged again, that copy would
            // be granted while its client reads this answer and never learns it holds the
            // lease (docs/spec.md §4). So the id joins the retry memory, which is part of the
            // state: a new version, with the status, holder and lease unchanged.
            return commit(state, cx, fp, O_IN_PROGRESS, Changes::new(), &NO_DETAIL, None);
        }
        return reclaim(state, cx, fp);
    }
    if status == m.status[ST_FAILED] && truthy(item(state, S_RETRYABLE))? {
        return reclaim(state, cx, fp);
    }
    answer_without_grant(state, cx, false)
}

/// What a claim learns when it gets no grant: the state's answer, no change (`in_progress`,
/// `replayed` with the result, `result_expired`, or `failed` with the error). `retried`: a
/// retried grant's, whose grant no longer holds.
unsafe fn answer_without_grant(state: P, cx: &Cx, retried: bool) -> Fallible<Owned> {
    let m = model();
    let d = Detail::retried(retried);
    let status = item(state, S_STATUS);
    if status == m.status[ST_CLAIMED] {
        return answer(state, cx, m.outcome[O_IN_PROGRESS], &d);
    }
    let expires = item(state, S_EXPIRES_AT_MS);
    if status == m.status[ST_COMPLETED] && !is_none(expires) && lt(cx.t, expires)? {
        let d = Detail { result: item(state, S_RESULT), ..d };
        return answer(state, cx, m.outcome[O_REPLAYED], &d);
    }
    if status == m.status[ST_COMPLETED] || status == m.status[ST_EXPIRED] {
        return answer(state, cx, m.outcome[O_RESULT_EXPIRED], &d);
    }
    answer(state, cx, m.outcome[O_FAILED], &Detail { error: item(state, S_ERROR), ..d })
}

/// The holder's heartbeat: the lease runs on from now, by the heartbeat's lease or else the
/// claim's. Any other token is fenced.
unsafe fn on_heartbeat(state: P, cx: &Cx, fp: P) -> Fallible<Owned> {
    if ne(fp, item(state, S_TOKEN_FP))? {
        return stale(state, cx, false);
    }
    if !status_is(state, ST_CLAIMED) {
        return answer_with_state(state, cx, &NO_DETAIL);
    }
    let asked = cx.field(HB_LEASE_MS)?;
    let lease = if is_none(asked) { item(state, S_LEASE_MS) } else { asked };
    let mut changes = Changes::new();
    if truthy(item(state, S_RELEASED))? {
        // The holder works on after all: its outcome is unknown again.
        changes.share(S_RELEASED, ffi::Py_False());
    }
    changes.set(S_LEASE_DEADLINE_MS, add(cx.t, lease)?);
    changes.share(S_LAST_HEARTBEAT_MS, cx.t);
    commit(state, cx, fp, O_HEARTBEAT_OK, changes, &NO_DETAIL, None)
}

/// Whether an earlier grant of this operation went to the token of fingerprint `fp`.
///
/// The grants stay in the retry memory for the life of the state; a grant's entry with an
/// empty fingerprint (written before fingerprints were kept) might be any token, so it
/// counts. Run only for a fenced completion: a scan of the grants, off the hot path.
unsafe fn was_granted(state: P, fp: P) -> Fallible<bool> {
    let m = model();
    let previous =
        optional_model(item(state, S_PREVIOUS), m.previous, N_PREVIOUS, "state.previous")?;
    if let Some(previous) = previous {
        if eq(item(previous, P_TOKEN_FP), fp)? {
            return Ok(true);
        }
    }
    let recent = recent_of(state)?;
    for i in 0..objects::size(recent) {
        let r = entry(recent, i)?;
        if is_grant(item(r, R_OUTCOME))? {
            let token_fp = item(r, R_TOKEN_FP);
            if same_or_eq(fp, token_fp)? || same_or_eq(m.empty, token_fp)? {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// The holder's completion (its lease may have lapsed if nobody reclaimed): COMPLETED, the
/// result kept for the claim's retention. A holder that completes again is answered by
/// `duplicate_complete`; any other token is fenced.
unsafe fn on_complete(state: P, cx: &Cx, fp: P) -> Fallible<Owned> {
    let m = model();
    if ne(fp, item(state, S_TOKEN_FP))? {
        // A fenced attempt's side effect already happened: flagged for the audit. A token no
        // grant ever went to (a forgery, a bug) proves no effect: fenced, not flagged.
        return stale(state, cx, was_granted(state, fp)?);
    }
    if status_is(state, ST_CLAIMED) {
        let result = cx.field(CO_RESULT)?;
        let hex = sha256_hex(result)?;
        let result_hash = Owned::take(objects::text(&hex))?;
        let payload = Owned::take(objects::text(&hex[..PAYLOAD_FP_HEX]))?;
        let mut changes = Changes::new();
        changes.share(S_STATUS, m.status[ST_COMPLETED]);
        changes.share(S_RESULT, result);
        changes.set(S_RESULT_HASH, result_hash);
        changes.share(S_COMPLETED_AT_MS, cx.t);
        changes.set(S_EXPIRES_AT_MS, add(cx.t, item(state, S_RETENTION_MS))?);
        let d = Detail { result, ..NO_DETAIL };
        return commit(state, cx, fp, O_COMPLETED, changes, &d, Some(payload));
    }
    if status_is(state, ST_FAILED) {
        return answer_with_state(state, cx, &NO_DETAIL);
    }
    duplicate_complete(state, cx, false)
}

/// The holder completes again: the stored answer when the result is the same (an EXPIRED
/// state, whose body is gone, by its kept hash), a conflict when it differs.
unsafe fn duplicate_complete(state: P, cx: &Cx, retried: bool) -> Fallible<Owned> {
    let m = model();
    let d = Detail::retried(retried);
    let result = cx.field(CO_RESULT)?;
    if ffi::PyBytes_Check(result) == 0 {
        return Err(super::values::expected("bytes", result)); // a result is `bytes`
    }
    if status_is(state, ST_COMPLETED) && eq(result, item(state, S_RESULT))? {
        let d = Detail { result: item(state, S_RESULT), ..d };
        return answer(state, cx, m.outcome[O_COMPLETED], &d);
    }
    let requested = sha256_text(result)?;
    let stored = item(state, S_RESULT_HASH);
    if eq(requested.ptr(), stored)? {
        // EXPIRED: the same result, whose body is gone.
        return answer_with_state(state, cx, &d);
    }
    let d = Detail { stored_hash: stored, request_hash: requested.ptr(), ..d };
    answer(state, cx, m.outcome[O_CONFLICT], &d)
}

unsafe fn on_fail(state: P, cx: &Cx, fp: P) -> Fallible<Owned> {
    if ne(fp, item(state, S_TOKEN_FP))? {
        return stale(state, cx, false);
    }
    if !status_is(state, ST_CLAIMED) {
        return answer_with_state(state, cx, &NO_DETAIL);
    }
    let error = cx.field(F_ERROR)?;
    let mut changes = Changes::new();
    changes.share(S_STATUS, model().status[ST_FAILED]);
    changes.share(S_ERROR, error);
    changes.share(S_RETRYABLE, cx.field(F_RETRYABLE)?);
    commit(state, cx, fp, O_FAILED, changes, &Detail { error, ..NO_DETAIL }, None)
}

/// The holder gives the lease up: deadline = t, reclaimable at once, and no unknown outcome
/// at the reclaim unless it heartbeats again.
unsafe fn on_release(state: P, cx: &Cx, fp: P) -> Fallible<Owned> {
    if ne(fp, item(state, S_TOKEN_FP))? {
        return stale(state, cx, false);
    }
    if !status_is(state, ST_CLAIMED) {
        return answer_with_state(state, cx, &NO_DETAIL);
    }
    let mut changes = Changes::new();
    changes.share(S_LEASE_DEADLINE_MS, cx.t);
    changes.share(S_RELEASED, ffi::Py_True());
    commit(state, cx, fp, O_RELEASED, changes, &NO_DETAIL, None)
}

/// A cancel carries no token: it flags the holder's attempt, which learns it at its next
/// heartbeat.
unsafe fn on_cancel(state: P, cx: &Cx, fp: P) -> Fallible<Owned> {
    if !status_is(state, ST_CLAIMED) {
        return answer_with_state(state, cx, &NO_DETAIL);
    }
    if truthy(item(state, S_CANCEL_REQUESTED))? {
        return unchanged(state, cx, O_CANCEL_REQUESTED);
    }
    let mut changes = Changes::new();
    changes.share(S_CANCEL_REQUESTED, ffi::Py_True());
    changes.share(S_CANCEL_REASON, cx.field(CA_REASON)?);
    commit(state, cx, fp, O_CANCEL_REQUESTED, changes, &NO_DETAIL, None)
}

/// A sweep tick: a completion whose `expires_at_ms` is reached becomes EXPIRED, its result
/// purged; its identity and hashes stay.
unsafe fn on_sweep(state: P, cx: &Cx, fp: P) -> Fallible<Owned> {
    let expires = item(state, S_EXPIRES_AT_MS);
    if !status_is(state, ST_COMPLETED) || is_none(expires) || gt(expires, cx.t)? {
        return answer_with_state(state, cx, &NO_DETAIL);
    }
    let mut changes = Changes::new();
    changes.share(S_STATUS, model().status[ST_EXPIRED]);
    changes.share(S_RESULT, ffi::Py_None());
    commit(state, cx, fp, O_EXPIRED, changes, &NO_DETAIL, None)
}

/// Every kind but claims, approves and denies, judged against an existing state. A get is a
/// read through the log: the outcome names the state, which the decision carries.
pub unsafe fn on_other(state: P, cx: &Cx, fp: P) -> Fallible<Owned> {
    match cx.kind {
        B_HEARTBEAT => on_heartbeat(state, cx, fp),
        B_COMPLETE => on_complete(state, cx, fp),
        B_FAIL => on_fail(state, cx, fp),
        B_RELEASE => on_release(state, cx, fp),
        B_CANCEL => on_cancel(state, cx, fp),
        B_SWEEP => on_sweep(state, cx, fp),
        B_GET => answer_with_state(state, cx, &NO_DETAIL),
        _ => super::inherits::on_inherit(state, cx),
    }
}

/// Whether the request is a retry of `seen`, whose id it has: same token, same payload (an
/// empty fingerprint in `seen` was not recorded and matches any).
pub unsafe fn is_retry(seen: P, fp: P, cx: &Cx) -> Fallible<bool> {
    let seen_fp = item(seen, R_TOKEN_FP);
    if truthy(seen_fp)? && ne(seen_fp, fp)? {
        return Ok(false);
    }
    let seen_payload = item(seen, R_PAYLOAD_FP);
    Ok(!truthy(seen_payload)? || eq(seen_payload, cx.payload_fingerprint()?)?)
}

/// A retry of a request that already changed the state: it takes no effect again.
///
/// A retried grant gets its grant back only while it still holds (same epoch, CLAIMED);
/// otherwise the state's answer without a new grant. A retried completion is a duplicate
/// complete. Any other retry gets its first answer: a claim first answered `in_progress` is
/// answered so again, and granted nothing.
pub unsafe fn retried(state: P, cx: &Cx, seen: P) -> Fallible<Owned> {
    let m = model();
    let outcome = item(seen, R_OUTCOME);
    if is_grant(outcome)? {
        if status_is(state, ST_CLAIMED) && eq(item(state, S_EPOCH), item(seen, R_EPOCH))? {
            return answer(state, cx, outcome, &Detail::retried(true));
        }
        return answer_without_grant(state, cx, true);
    }
    if outcome == m.outcome[O_COMPLETED] && cx.kind == B_COMPLETE {
        return duplicate_complete(state, cx, true);
    }
    let d = Detail { retried: true, epoch: item(seen, R_EPOCH), ..NO_DETAIL };
    answer(state, cx, outcome, &d)
}
