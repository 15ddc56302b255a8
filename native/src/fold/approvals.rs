//! Approvals (docs/spec.md §4, "Approvals"): an intent recorded before the effect, decided
//! by a person. The rules for a claim whose policy requires approval, for a claim that meets
//! an intent and for an approve or deny.

use super::model::*;
use super::values::{add, add_int, eq, ge, ne, truthy};
use super::verdicts::*;
use crate::objects::{self, is_none, item, Fallible, Owned, P};
use pyo3::ffi;

/// `request.approval` (not None: the caller checked), checked to be an ApprovalPolicy.
unsafe fn policy_of(cx: &Cx) -> Fallible<P> {
    let policy = cx.request(Q_APPROVAL);
    if ffi::Py_TYPE(policy) != model().policy || objects::size(policy) != N_POLICY {
        let message =
            format!("request.approval is a {}, not its model", objects::type_name(policy));
        return Err(objects::raise(ffi::PyExc_TypeError, &message));
    }
    Ok(policy)
}

/// `state.approval` where it is read: checked to be an Approval (or None).
unsafe fn approval_of(state: P) -> Fallible<Option<P>> {
    let m = model();
    optional_model(item(state, S_APPROVAL), m.approval, N_APPROVAL, "state.approval")
}

/// A claim whose policy requires approval, into an absent state: the intent is recorded,
/// nothing is granted. Epoch 0 and no holder, as for an inheritance; the lease deadline shows
/// the approval's deadline. The requesting worker is kept to refuse its own approval.
pub unsafe fn first_intent(cx: &Cx) -> Fallible<Owned> {
    let m = model();
    let policy = policy_of(cx)?;
    let deadline = add(cx.t, item(policy, PO_TIMEOUT_MS))?;
    let outcome = m.outcome[O_AWAITING_APPROVAL];
    // RecentRequest(request.request_id, Outcome.AWAITING_APPROVAL, 0, "", "", t): never a
    // retry (`judge` skips an `awaiting_approval` entry), its client re-sends to wait.
    let mut memo = m.recent_defaults;
    memo[R_REQUEST_ID] = cx.request(Q_REQUEST_ID);
    memo[R_OUTCOME] = outcome;
    memo[R_EPOCH] = m.zero;
    memo[R_TOKEN_FP] = m.empty;
    memo[R_PAYLOAD_FP] = m.empty;
    memo[R_LOG_TIME_MS] = cx.t;
    let memo = objects::tuple_shared(m.recent, &memo)?;
    let mut changes = Changes::new();
    grant_changes(cx, m.empty, &mut changes)?;
    changes.share(S_STATUS, m.status[ST_AWAITING_APPROVAL]);
    changes.share(S_LEASE_DEADLINE_MS, deadline.ptr());
    let recent = objects::plain_tuple(&[memo.ptr()])?;
    let request_hash = cx.field(C_REQUEST_HASH)?;
    let mut approval = m.approval_defaults;
    approval[A_REQUESTED_AT_MS] = cx.t;
    approval[A_DEADLINE_MS] = deadline.ptr();
    approval[A_REQUESTED_BY] = cx.field(C_WORKER_ID)?;
    approval[A_SELF_APPROVAL] = item(policy, PO_SELF_APPROVAL);
    approval[A_APPROVERS] = item(policy, PO_APPROVERS);
    let approval = objects::tuple_shared(m.approval, &approval)?;
    let mut values = vec![
        (S_OPERATION_ID, cx.request(Q_OPERATION_ID)),
        (S_CHANNEL_ID, cx.request(Q_CHANNEL_ID)),
        (S_KEY_NAME, cx.request(Q_KEY_NAME)),
        (S_VERSION, m.one),
        (S_EPOCH, m.zero),
        (S_REQUEST_HASH, request_hash),
        (S_RECENT, recent.ptr()),
        (S_UPDATED_AT_MS, cx.t),
        (S_APPROVAL, approval.ptr()),
    ];
    values.extend((0..N_STATE).filter_map(|i| changes.get(i).map(|v| (i, v))));
    let state = first_state(&values)?;
    created(state, cx, O_AWAITING_APPROVAL, &NO_DETAIL)
}

/// A claim meets an intent: the grant once approved (by any token: the operation's first,
/// epoch 1), `denied` with the reason, `approval_expired` from the deadline alone, or else
/// `awaiting_approval`.
pub unsafe fn claim_under_approval(state: P, cx: &Cx, fp: P) -> Fallible<Owned> {
    let m = model();
    if status_is(state, ST_APPROVED) {
        let mut changes = Changes::new();
        grant_changes(cx, fp, &mut changes)?;
        changes.set(S_EPOCH, add_int(item(state, S_EPOCH), 1)?);
        return commit(state, cx, fp, O_CLAIMED, changes, &NO_DETAIL, None);
    }
    let approval = approval_of(state)?;
    if status_is(state, ST_DENIED) {
        let reason = approval.map_or(ffi::Py_None(), |a| item(a, A_REASON));
        let d = Detail { error: reason, ..NO_DETAIL };
        return answer(state, cx, m.outcome[O_DENIED], &d);
    }
    if let Some(a) = approval {
        if ge(cx.t, item(a, A_DEADLINE_MS))? {
            return unchanged(state, cx, O_APPROVAL_EXPIRED);
        }
    }
    unchanged(state, cx, O_AWAITING_APPROVAL)
}

/// An approver's approve or deny, bound to the intent's request hash: decided once.
///
/// `signed`: the judge's finding that the decision is signed by one of the approvers the
/// intent lists (`oncelog.identity.approver_signature`; the fold does no cryptography); read
/// only when it lists some. An intent without approvers is decided by name.
pub unsafe fn on_decide(state: P, cx: &Cx, fp: P, signed: P) -> Fallible<Owned> {
    let m = model();
    let asked = cx.field(AD_REQUEST_HASH)?;
    if ne(asked, item(state, S_REQUEST_HASH))? {
        let stored = item(state, S_REQUEST_HASH);
        let d = Detail { stored_hash: stored, request_hash: asked, ..NO_DETAIL };
        return answer(state, cx, m.outcome[O_CONFLICT], &d);
    }
    if !status_is(state, ST_AWAITING_APPROVAL) || is_none(item(state, S_APPROVAL)) {
        return answer_with_state(state, cx, &NO_DETAIL);
    }
    let Some(approval) = approval_of(state)? else {
        return answer_with_state(state, cx, &NO_DETAIL); // None: handled above
    };
    if ge(cx.t, item(approval, A_DEADLINE_MS))? {
        return unchanged(state, cx, O_APPROVAL_EXPIRED);
    }
    let refused = m.outcome[O_APPROVAL_REFUSED];
    if truthy(item(approval, A_APPROVERS))? && !truthy(signed)? {
        return answer(state, cx, refused, &Detail { error: m.unsigned, ..NO_DETAIL });
    }
    let approver = cx.field(AD_APPROVER)?;
    if eq(approver, item(approval, A_REQUESTED_BY))? && !truthy(item(approval, A_SELF_APPROVAL))? {
        return answer(state, cx, refused, &Detail { error: m.self_approval, ..NO_DETAIL });
    }
    let approve = cx.kind == B_APPROVE;
    let reason = if approve { ffi::Py_None() } else { cx.field(DE_REASON)? };
    // The approval, decided: who, when, and a denial's reason recorded.
    let mut decided = [std::ptr::null_mut(); N_APPROVAL];
    for (i, v) in decided.iter_mut().enumerate() {
        *v = item(approval, i);
    }
    decided[A_APPROVED] = objects::bool_ptr(approve);
    decided[A_DECIDED_BY] = approver;
    decided[A_DECIDED_AT_MS] = cx.t;
    decided[A_REASON] = reason;
    let decided = objects::tuple_shared(m.approval, &decided)?;
    let (outcome, status) = if approve { (O_APPROVED, ST_APPROVED) } else { (O_DENIED, ST_DENIED) };
    let mut changes = Changes::new();
    changes.share(S_STATUS, m.status[status]);
    changes.set(S_APPROVAL, decided);
    commit(state, cx, fp, outcome, changes, &Detail { error: reason, ..NO_DETAIL }, None)
}
