//! The verdict helpers every rule shares: decisions, new state versions, the retry memory
//! and the payload fingerprints it keeps (docs/spec.md §4).

use super::model::*;
use super::values::{self, add_int, gt, sub_int};
use crate::objects::{self, bool_ptr, is_none, item, Fallible, Owned, Raised, P};
use pyo3::ffi;
use std::cell::Cell;
use std::ptr::null_mut;

/// One call's request: the request, its body and the body's kind, the log time.
pub struct Cx {
    pub req: P,
    pub body: P,
    pub kind: usize,
    pub t: P,
    /// The body's payload fingerprint once computed (owned), NULL before.
    payload: Cell<P>,
}

impl Drop for Cx {
    fn drop(&mut self) {
        unsafe { ffi::Py_XDECREF(self.payload.get()) }
    }
}

impl Cx {
    pub fn new(req: P, body: P, kind: usize, t: P) -> Cx {
        Cx { req, body, kind, t, payload: Cell::new(null_mut()) }
    }

    /// Field `i` of the body (borrowed); an empty slot raises AttributeError, as reading
    /// it in Python does.
    #[inline(always)]
    pub unsafe fn field(&self, i: usize) -> Fallible<P> {
        let v = objects::slot(self.body, model().slots[self.kind][i]);
        if v.is_null() {
            let message = format!(
                "'{}' object has no attribute '{}'",
                objects::type_name(self.body),
                BODY_FIELDS[self.kind][i]
            );
            return Err(objects::raise(ffi::PyExc_AttributeError, &message));
        }
        Ok(v)
    }

    #[inline(always)]
    pub unsafe fn request(&self, i: usize) -> P {
        item(self.req, i)
    }

    /// The body's payload fingerprint (`payload_fingerprint`), borrowed from the call's memo
    /// (the body is immutable: every use in one call gets the same value).
    pub unsafe fn payload_fingerprint(&self) -> Fallible<P> {
        let memo = self.payload.get();
        if !memo.is_null() {
            return Ok(memo);
        }
        let fp = payload_fingerprint(self)?.into_ptr();
        self.payload.set(fp);
        Ok(fp)
    }
}

/// A decision's optional fields (borrowed; NULL: the model's default).
#[derive(Clone, Copy)]
pub struct Detail {
    pub epoch: P,
    pub retried: bool,
    pub stored_hash: P,
    pub request_hash: P,
    pub result: P,
    pub error: P,
    pub suspected: bool,
    pub previous: P,
}

pub const NO_DETAIL: Detail = Detail {
    epoch: null_mut(),
    retried: false,
    stored_hash: null_mut(),
    request_hash: null_mut(),
    result: null_mut(),
    error: null_mut(),
    suspected: false,
    previous: null_mut(),
};

impl Detail {
    pub fn retried(retried: bool) -> Detail {
        Detail { retried, ..NO_DETAIL }
    }
}

/// A state's new field values (owned; NULL: unchanged), what `commit` applies.
pub struct Changes([P; N_STATE]);

impl Changes {
    pub fn new() -> Changes {
        Changes([null_mut(); N_STATE])
    }

    #[inline(always)]
    pub unsafe fn set(&mut self, i: usize, v: Owned) {
        let old = std::mem::replace(&mut self.0[i], v.into_ptr());
        ffi::Py_XDECREF(old);
    }

    /// Set field `i` to the borrowed `v`.
    #[inline(always)]
    pub unsafe fn share(&mut self, i: usize, v: P) {
        self.set(i, Owned::share(v));
    }

    #[inline(always)]
    pub fn get(&self, i: usize) -> Option<P> {
        let v = self.0[i];
        (!v.is_null()).then_some(v)
    }
}

impl Drop for Changes {
    fn drop(&mut self) {
        for v in self.0 {
            unsafe { ffi::Py_XDECREF(v) }
        }
    }
}

/// A new version with `changes` over `state`'s fields, as `state._replace(**changes)` returns
/// it.
pub unsafe fn evolve(state: P, changes: &Changes) -> Fallible<Owned> {
    let mut values = [null_mut(); N_STATE];
    for (i, v) in values.iter_mut().enumerate() {
        *v = changes.get(i).unwrap_or_else(|| item(state, i));
    }
    objects::tuple_shared(model().state, &values)
}

/// The state's status as a member index, or None when it is not a Status member.
#[inline(always)]
pub unsafe fn status_of(state: P) -> Option<usize> {
    let s = item(state, S_STATUS);
    model().status.iter().position(|&m| m == s)
}

/// `state.status is Status.<i>`.
#[inline(always)]
pub unsafe fn status_is(state: P, i: usize) -> bool {
    item(state, S_STATUS) == model().status[i]
}

/// `value in members` for a frozenset of enum members; `known` answers for the members
/// of `all`, anything else is looked up as Python looks it up (hash and `==`).
#[inline(always)]
pub unsafe fn member_in(
    value: P,
    all: &[P],
    known: impl Fn(usize) -> bool,
    set: P,
) -> Fallible<bool> {
    if let Some(i) = all.iter().position(|&m| m == value) {
        return Ok(known(i));
    }
    match ffi::PySet_Contains(set, value) {
        -1 => Err(Raised),
        r => Ok(r == 1),
    }
}

/// Whether `outcome` is a grant's: `claimed` or `reclaimed`.
#[inline(always)]
pub unsafe fn is_grant(outcome: P) -> Fallible<bool> {
    let m = model();
    member_in(outcome, &m.outcome, |i| i == O_CLAIMED || i == O_RECLAIMED, m.grants)
}

/// `state.recent`: a tuple of RecentRequest, each checked where it is read.
#[inline(always)]
pub unsafe fn recent_of(state: P) -> Fallible<P> {
    let recent = item(state, S_RECENT);
    if ffi::PyTuple_CheckExact(recent) == 0 {
        let message = format!("state.recent is a tuple, not {}", objects::type_name(recent));
        return Err(objects::raise(ffi::PyExc_TypeError, &message));
    }
    Ok(recent)
}

/// Entry `i` of a state's retry memory, checked to be a RecentRequest.
#[inline(always)]
pub unsafe fn entry(recent: P, i: usize) -> Fallible<P> {
    let r = item(recent, i);
    if ffi::Py_TYPE(r) != model().recent || objects::size(r) != N_RECENT {
        let message =
            format!("state.recent holds a {}, not a RecentRequest", objects::type_name(r));
        return Err(objects::raise(ffi::PyExc_TypeError, &message));
    }
    Ok(r)
}

/// A field of a state that is a model or None (previous, approval), checked to be `tp`.
#[inline(always)]
pub unsafe fn optional_model(
    v: P,
    tp: *mut ffi::PyTypeObject,
    n: usize,
    what: &str,
) -> Fallible<Option<P>> {
    if is_none(v) {
        return Ok(None);
    }
    if ffi::Py_TYPE(v) != tp || objects::size(v) != n {
        let message = format!("{what} is a {}, not its model", objects::type_name(v));
        return Err(objects::raise(ffi::PyExc_TypeError, &message));
    }
    Ok(Some(v))
}

// --- decisions ------------------------------------------------------------------------

/// A decision that reports `state` (the state after; borrowed, may be None) alongside `d`.
/// Its epoch is the state's unless `d` names one: a retry is answered with the epoch of its
/// first answer (for a holder fenced since, its own, not the current holder's).
pub unsafe fn decide(state: P, cx: &Cx, outcome: P, changed: bool, d: &Detail) -> Fallible<Owned> {
    let m = model();
    let epoch = if !d.epoch.is_null() {
        d.epoch
    } else if is_none(state) {
        ffi::Py_None()
    } else {
        item(state, S_EPOCH)
    };
    let mut values = m.decision_defaults;
    values[0] = cx.request(Q_REQUEST_ID);
    values[1] = cx.request(Q_OPERATION_ID);
    values[2] = m.kind[cx.kind];
    values[3] = outcome;
    values[4] = bool_ptr(changed);
    values[5] = cx.t;
    values[6] = state;
    values[7] = epoch;
    if d.retried {
        values[D_RETRIED] = ffi::Py_True();
    }
    if d.suspected {
        values[D_SUSPECTED] = ffi::Py_True();
    }
    for (i, v) in [
        (D_STORED_HASH, d.stored_hash),
        (D_REQUEST_HASH, d.request_hash),
        (D_RESULT, d.result),
        (D_ERROR, d.error),
        (D_PREVIOUS, d.previous),
    ] {
        if !v.is_null() {
            values[i] = v;
        }
    }
    objects::tuple_shared(m.decision, &values)
}

/// `(state, decision)`, both owned.
#[inline(always)]
pub unsafe fn pair(state: Owned, decision: Owned) -> Fallible<Owned> {
    let t = Owned::take(ffi::PyTuple_New(2))?;
    ffi::PyTuple_SET_ITEM(t.ptr(), 0, state.into_ptr());
    ffi::PyTuple_SET_ITEM(t.ptr(), 1, decision.into_ptr());
    Ok(t)
}

/// `(state, decision)` with the same state object: an answer without a change.
#[inline(always)]
pub unsafe fn answer(state: P, cx: &Cx, outcome: P, d: &Detail) -> Fallible<Owned> {
    let decision = decide(state, cx, outcome, false, d)?;
    pair(Owned::share(state), decision)
}

/// No change and no detail: judged, answered, nothing new to publish on the changelog.
#[inline(always)]
pub unsafe fn unchanged(state: P, cx: &Cx, outcome: usize) -> Fallible<Owned> {
    answer(state, cx, model().outcome[outcome], &NO_DETAIL)
}

/// The table's "any other pair" row (docs/spec.md §4): the outcome naming the state's status,
/// no change.
pub unsafe fn answer_with_state(state: P, cx: &Cx, d: &Detail) -> Fallible<Owned> {
    let m = model();
    let outcome = match status_of(state) {
        Some(s) => m.outcome[OUTCOME_OF_STATUS[s]],
        None => {
            // A status that is not a member: looked up by hash and `==`, a KeyError if none.
            let status = item(state, S_STATUS);
            let o = ffi::PyDict_GetItemWithError(m.outcome_of_status, status);
            if o.is_null() {
                if ffi::PyErr_Occurred().is_null() {
                    let key = objects::plain_tuple(&[status])?;
                    ffi::PyErr_SetObject(ffi::PyExc_KeyError, key.ptr());
                }
                return Err(Raised);
            }
            o
        }
    };
    answer(state, cx, outcome, d)
}

/// `stale_claim`: a request by a token that does not hold is fenced, no change. `suspected`
/// flags a completion by an earlier grant's token, whose effect happened
/// (`duplicate_effect_suspected`, docs/spec.md §4).
#[inline(always)]
pub unsafe fn stale(state: P, cx: &Cx, suspected: bool) -> Fallible<Owned> {
    answer(state, cx, model().outcome[O_STALE_CLAIM], &Detail { suspected, ..NO_DETAIL })
}

// --- the retry memory -----------------------------------------------------------------

/// A compact stand-in for what a request asks for, to tell a retry from a reused id (a new
/// reference). A claim counts by its request hash (params outside `dedup_fields` are
/// volatile), a completion by its result's hash, a heartbeat by its lease and anything else
/// by a hash of its `repr` (the kind and every field, stable across runs). At most
/// `PAYLOAD_FP_HEX` characters, and no hashing on the common paths.
unsafe fn payload_fingerprint(cx: &Cx) -> Fallible<Owned> {
    let m = model();
    match cx.kind {
        B_HEARTBEAT => {
            let lease = cx.field(HB_LEASE_MS)?;
            if is_none(lease) {
                return Ok(Owned::share(m.hb));
            }
            if let Some(v) = values::small_int(lease) {
                return Owned::take(objects::text(format!("hb:{v}").as_bytes()));
            }
            // `hb:<lease>` of an `int | None` field: an int subtype (a bool) formats as the
            // int it stands for, anything else is a TypeError.
            if ffi::PyLong_Check(lease) == 0 {
                return Err(values::expected("int or None", lease));
            }
            let lease = Owned::take(ffi::PyNumber_Long(lease))?;
            let formatted = Owned::take(ffi::PyObject_Str(lease.ptr()))?;
            let head = Owned::take(objects::text(b"hb:"))?;
            Owned::take(ffi::PyUnicode_Concat(head.ptr(), formatted.ptr()))
        }
        B_CLAIM => values::prefix(cx.field(C_REQUEST_HASH)?, PAYLOAD_FP_HEX),
        B_COMPLETE => {
            let hex = values::sha256_hex(cx.field(CO_RESULT)?)?;
            Owned::take(objects::text(&hex[..PAYLOAD_FP_HEX]))
        }
        B_RELEASE | B_SWEEP => Ok(Owned::share(m.body_names[cx.kind])),
        _ => {
            // The SHA-256 of the body's `repr`, strictly UTF-8 encoded.
            let repr = Owned::take(ffi::PyObject_Repr(cx.body))?;
            let encoded = Owned::take(ffi::PyUnicode_AsUTF8String(repr.ptr()))?;
            let hex = values::sha256_hex(encoded.ptr())?;
            Owned::take(objects::text(&hex[..PAYLOAD_FP_HEX]))
        }
    }
}

/// The retry memory `recent` with `memo` added; other entries older than the retry window
/// (`RETRY_MEMORY_MS`) are forgotten, never a grant's: the id that won each grant is kept for
/// the life of the state.
unsafe fn remember(recent: P, memo: Owned, t: P) -> Fallible<Owned> {
    let n = objects::size(recent);
    let horizon = sub_int(t, RETRY_MEMORY_MS)?;
    // Entries are in log-time order: while the oldest is inside the window, all are.
    let keep_all = n == 0 || gt(item(entry(recent, 0)?, R_LOG_TIME_MS), horizon.ptr())?;
    let mut kept: Vec<P> = Vec::with_capacity(n + 1);
    for i in 0..n {
        let r = entry(recent, i)?;
        if keep_all || gt(item(r, R_LOG_TIME_MS), horizon.ptr())? || is_grant(item(r, R_OUTCOME))? {
            kept.push(r);
        }
    }
    kept.push(memo.ptr());
    objects::plain_tuple(&kept)
}

/// A new state version with `changes`, and a decision with `changed=True` and `d`. The
/// request's id joins the retry memory with its outcome, epoch, `fp` (the fingerprint of its
/// token) and payload fingerprint (`payload_fp` when the rule has it already).
pub unsafe fn commit(
    state: P,
    cx: &Cx,
    fp: P,
    outcome: usize,
    mut changes: Changes,
    d: &Detail,
    payload_fp: Option<Owned>,
) -> Fallible<Owned> {
    let m = model();
    let outcome = m.outcome[outcome];
    let epoch = changes.get(S_EPOCH).unwrap_or_else(|| item(state, S_EPOCH));
    let payload = match &payload_fp {
        Some(p) => p.ptr(),
        None => cx.payload_fingerprint()?,
    };
    let worker = changes.get(S_WORKER_ID).unwrap_or(m.empty);
    let request_id = cx.request(Q_REQUEST_ID);
    let memo =
        objects::tuple_shared(m.recent, &[request_id, outcome, epoch, fp, payload, cx.t, worker])?;
    changes.set(S_VERSION, add_int(item(state, S_VERSION), 1)?);
    changes.share(S_UPDATED_AT_MS, cx.t);
    changes.set(S_RECENT, remember(recent_of(state)?, memo, cx.t)?);
    let new = evolve(state, &changes)?;
    let decision = decide(new.ptr(), cx, outcome, true, d)?;
    pair(new, decision)
}

/// Everything a grant (a first claim, a reclaim, the claim after an approval) sets on the
/// state: the claim's terms, the holder `fp` and its worker, a lease from now, and none of
/// the previous attempt's heartbeat, cancel, error, retryable flag or release.
pub unsafe fn grant_changes(cx: &Cx, fp: P, changes: &mut Changes) -> Fallible<()> {
    let m = model();
    changes.share(S_STATUS, m.status[ST_CLAIMED]);
    changes.share(S_TOOL_NAME, cx.field(C_TOOL_NAME)?);
    changes.share(S_PARAMS, cx.field(C_PARAMS)?);
    changes.share(S_EFFECT, cx.field(C_EFFECT)?);
    changes.share(S_LEASE_MS, cx.field(C_LEASE_MS)?);
    changes.share(S_RETENTION_MS, cx.field(C_RETENTION_MS)?);
    changes.share(S_TOKEN_FP, fp);
    changes.share(S_WORKER_ID, cx.field(C_WORKER_ID)?);
    changes.share(S_CLAIMED_AT_MS, cx.t);
    changes.set(S_LEASE_DEADLINE_MS, values::add(cx.t, cx.field(C_LEASE_MS)?)?);
    changes.share(S_LAST_HEARTBEAT_MS, ffi::Py_None());
    changes.share(S_CANCEL_REQUESTED, ffi::Py_False());
    changes.share(S_CANCEL_REASON, ffi::Py_None());
    changes.share(S_ERROR, ffi::Py_None());
    changes.share(S_RETRYABLE, ffi::Py_False());
    changes.share(S_RELEASED, ffi::Py_False());
    Ok(())
}

/// A first state version: `values` (borrowed) over the model's defaults, every field
/// without a default given.
pub unsafe fn first_state(values: &[(usize, P)]) -> Fallible<Owned> {
    let m = model();
    let mut fields = m.state_defaults;
    for &(i, v) in values {
        fields[i] = v;
    }
    debug_assert!(fields.iter().all(|v| !v.is_null()));
    objects::tuple_shared(m.state, &fields)
}

/// A first state version and its decision, with `changed=True`.
pub unsafe fn created(state: Owned, cx: &Cx, outcome: usize, d: &Detail) -> Fallible<Owned> {
    let decision = decide(state.ptr(), cx, model().outcome[outcome], true, d)?;
    pair(state, decision)
}
