//! Forks (docs/spec.md §4, "Forks"): a completion taken from another channel, into an empty
//! or a decided slot. An inherit carries no claim token: the child's state stays a function of
//! its own partition.

use super::model::*;
use super::values::{add, eq, ne, sha256_text, truthy};
use super::verdicts::*;
use crate::objects::{self, Fallible, Owned, P};

/// The inherit's provenance: Inheritance(from_channel, from_partition, from_offset, adopted).
unsafe fn inheritance(cx: &Cx) -> Fallible<Owned> {
    let fields = [
        cx.field(I_FROM_CHANNEL)?,
        cx.field(I_FROM_PARTITION)?,
        cx.field(I_FROM_OFFSET)?,
        cx.field(I_ADOPTED)?,
    ];
    objects::tuple_shared(model().inheritance, &fields)
}

/// An inherit into an empty slot: a completion whose provenance is another channel.
///
/// No grant happened on this channel: epoch 0, no holder. The result lives as long as the
/// parent's retention says, counted from now.
pub unsafe fn first_inherit(cx: &Cx) -> Fallible<Owned> {
    let m = model();
    // RecentRequest(request.request_id, Outcome.INHERITED, 0, "", the body's payload fp, t)
    let mut memo = m.recent_defaults;
    memo[R_REQUEST_ID] = cx.request(Q_REQUEST_ID);
    memo[R_OUTCOME] = m.outcome[O_INHERITED];
    memo[R_EPOCH] = m.zero;
    memo[R_TOKEN_FP] = m.empty;
    memo[R_PAYLOAD_FP] = cx.payload_fingerprint()?;
    memo[R_LOG_TIME_MS] = cx.t;
    let memo = objects::tuple_shared(m.recent, &memo)?;
    let recent = objects::plain_tuple(&[memo.ptr()])?;
    let result = cx.field(I_RESULT)?;
    let retention = cx.field(I_RETENTION_MS)?;
    let result_hash = sha256_text(result)?;
    let expires = add(cx.t, retention)?;
    let inherited = inheritance(cx)?;
    let values = [
        (S_OPERATION_ID, cx.request(Q_OPERATION_ID)),
        (S_CHANNEL_ID, cx.request(Q_CHANNEL_ID)),
        (S_KEY_NAME, cx.request(Q_KEY_NAME)),
        (S_STATUS, m.status[ST_COMPLETED]),
        (S_VERSION, m.one),
        (S_EPOCH, m.zero),
        (S_REQUEST_HASH, cx.field(I_REQUEST_HASH)?),
        (S_TOOL_NAME, cx.field(I_TOOL_NAME)?),
        (S_PARAMS, cx.field(I_PARAMS)?),
        (S_EFFECT, cx.field(I_EFFECT)?),
        (S_LEASE_MS, m.zero),
        (S_RETENTION_MS, retention),
        (S_TOKEN_FP, m.empty),
        (S_WORKER_ID, m.empty),
        (S_CLAIMED_AT_MS, cx.t),
        (S_LEASE_DEADLINE_MS, cx.t),
        (S_RESULT, result),
        (S_RESULT_HASH, result_hash.ptr()),
        (S_COMPLETED_AT_MS, cx.t),
        (S_EXPIRES_AT_MS, expires.ptr()),
        (S_RECENT, recent.ptr()),
        (S_UPDATED_AT_MS, cx.t),
        (S_INHERITED, inherited.ptr()),
    ];
    let state = first_state(&values)?;
    created(state, cx, O_INHERITED, &Detail { result, ..NO_DETAIL })
}

/// An inherit into a decided slot: the same completion is a no-op, anything else a conflict.
///
/// A fork sent again (it was interrupted, or is simply repeated) meets its own inheritance
/// and answers `inherited` without a new version. A slot completed with the same request and
/// result, by this channel or from another branch, keeps what it has. A slot that holds
/// anything else (a claim, a failure, another request or result) is never overwritten:
/// `conflict`, loudly.
pub unsafe fn on_inherit(state: P, cx: &Cx) -> Fallible<Owned> {
    let m = model();
    let done = status_is(state, ST_COMPLETED) || status_is(state, ST_EXPIRED);
    let stored_request = objects::item(state, S_REQUEST_HASH);
    let asked_request = cx.field(I_REQUEST_HASH)?;
    let (stored, asked): (P, Owned) = if !done || ne(stored_request, asked_request)? {
        (stored_request, Owned::share(asked_request))
    } else {
        let result_hash = objects::item(state, S_RESULT_HASH);
        let stored = if truthy(result_hash)? { result_hash } else { m.empty };
        (stored, sha256_text(cx.field(I_RESULT)?)?)
    };
    if !done || ne(stored, asked.ptr())? {
        let d = Detail { stored_hash: stored, request_hash: asked.ptr(), ..NO_DETAIL };
        return answer(state, cx, m.outcome[O_CONFLICT], &d);
    }
    let inherited = objects::item(state, S_INHERITED);
    if eq(inherited, inheritance(cx)?.ptr())? {
        return unchanged(state, cx, O_INHERITED);
    }
    answer_with_state(state, cx, &NO_DETAIL)
}
