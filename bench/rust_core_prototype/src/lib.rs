//! Issue 43 prototype: the request reader and a subset of the fold in Rust, returning the
//! package's own Python models (NamedTuples filled in place, slotted dataclasses filled by
//! slot offset). Measurement only: not imported by `oncelog`, not built by `make`.
//!
//! Anything outside the subset (approvals, inherits, a record the reader is unsure of)
//! is handed to the Python implementation, and counted (`stats()`).
#![allow(clippy::missing_safety_doc, clippy::needless_range_loop, static_mut_refs)]

use pyo3::ffi::{self, PyTypeObject, Py_ssize_t};
use pyo3::prelude::*;
use sha2::{Digest, Sha256};
use std::ptr::null_mut;

type P = *mut ffi::PyObject;

// --- field indices (checked against the models' _fields at import) ------------------------

#[rustfmt::skip]
const STATE_FIELDS: [&str; 31] = [
    "operation_id", "channel_id", "key_name", "status", "version", "epoch", "request_hash",
    "tool_name", "params", "effect", "lease_ms", "retention_ms", "token_fp", "worker_id",
    "claimed_at_ms", "lease_deadline_ms", "last_heartbeat_ms", "cancel_requested",
    "cancel_reason", "result", "result_hash", "completed_at_ms", "expires_at_ms", "error",
    "retryable", "released", "previous", "recent", "updated_at_ms", "inherited", "approval",
];
const S_OP: usize = 0;
const S_CH: usize = 1;
const S_KEY: usize = 2;
const S_STATUS: usize = 3;
const S_VERSION: usize = 4;
const S_EPOCH: usize = 5;
const S_RHASH: usize = 6;
const S_TOOL: usize = 7;
const S_PARAMS: usize = 8;
const S_EFFECT: usize = 9;
const S_LEASE: usize = 10;
const S_RETENTION: usize = 11;
const S_TOKEN_FP: usize = 12;
const S_WORKER: usize = 13;
const S_CLAIMED_AT: usize = 14;
const S_DEADLINE: usize = 15;
const S_LAST_HB: usize = 16;
const S_CANCEL_REQ: usize = 17;
const S_CANCEL_REASON: usize = 18;
const S_RESULT: usize = 19;
const S_RESULT_HASH: usize = 20;
const S_COMPLETED_AT: usize = 21;
const S_EXPIRES: usize = 22;
const S_ERROR: usize = 23;
const S_RETRYABLE: usize = 24;
const S_RELEASED: usize = 25;
const S_PREVIOUS: usize = 26;
const S_RECENT: usize = 27;
const S_UPDATED: usize = 28;
const N_STATE: usize = 31;

#[rustfmt::skip]
const DECISION_FIELDS: [&str; 17] = [
    "request_id", "operation_id", "kind", "outcome", "changed", "log_time_ms", "state", "epoch",
    "retried", "stored_hash", "request_hash", "result", "error", "duplicate_effect_suspected",
    "previous", "source_partition", "source_offset",
];
#[rustfmt::skip]
const REQUEST_FIELDS: [&str; 9] = [
    "request_id", "operation_id", "channel_id", "key_name", "claim_token", "body",
    "reply_partition", "reconciled", "approval",
];
#[rustfmt::skip]
const RECENT_FIELDS: [&str; 7] =
    ["request_id", "outcome", "epoch", "token_fp", "payload_fp", "log_time_ms", "worker_id"];
#[rustfmt::skip]
const PREVIOUS_FIELDS: [&str; 8] = [
    "epoch", "token_fp", "worker_id", "claimed_at_ms", "last_heartbeat_ms", "status", "error",
    "outcome_unknown",
];

// Bodies, in the Avro union's order (and Kind's): the index is the branch.
#[rustfmt::skip]
const BODY_NAMES: [&str; 11] = [
    "Claim", "Heartbeat", "Complete", "Fail", "Release", "Cancel", "Sweep", "Get", "Inherit",
    "Approve", "Deny",
];
const B_CLAIM: usize = 0;
const B_HEARTBEAT: usize = 1;
const B_COMPLETE: usize = 2;
const B_FAIL: usize = 3;
const B_RELEASE: usize = 4;
const B_CANCEL: usize = 5;
const B_SWEEP: usize = 6;
const B_GET: usize = 7;
const B_INHERIT: usize = 8;
// Claim's slots, in field order
const C_TOOL: usize = 0;
const C_PARAMS: usize = 1;
const C_RHASH: usize = 2;
const C_LEASE: usize = 3;
const C_RETENTION: usize = 4;
const C_EFFECT: usize = 5;
const C_WORKER: usize = 6;

// Status, in the enum's order
const ST_CLAIMED: usize = 0;
const ST_COMPLETED: usize = 1;
const ST_FAILED: usize = 2;
const ST_EXPIRED: usize = 3;
const ST_AWAITING: usize = 4;
const ST_APPROVED: usize = 5;
const ST_DENIED: usize = 6;
// Outcome, in the enum's order
const O_CLAIMED: usize = 0;
const O_RECLAIMED: usize = 1;
const O_IN_PROGRESS: usize = 2;
const O_REPLAYED: usize = 3;
const O_CONFLICT: usize = 4;
const O_RESULT_EXPIRED: usize = 5;
const O_FAILED: usize = 6;
const O_HEARTBEAT_OK: usize = 7;
const O_COMPLETED: usize = 8;
const O_STALE: usize = 9;
const O_RELEASED: usize = 10;
const O_CANCEL_REQUESTED: usize = 11;
const O_EXPIRED: usize = 12;
const O_INVALID: usize = 13;
const O_ABSENT: usize = 14;
const O_AWAITING: usize = 20;
// answer_with_state: the outcome naming each status
const OUTCOME_OF_STATUS: [usize; 7] = [15, 16, 17, 18, 20, 21, 22];

const RETRY_MEMORY_MS: i64 = 15 * 60 * 1000;
const PAYLOAD_FP_HEX: usize = 16;
const TOKEN_FP_HEX: usize = 32;
const FP_CACHE_MAX: isize = 4096;

// --- globals, set once at import -----------------------------------------------------------

struct G {
    request_t: *mut PyTypeObject,
    bodies: [*mut PyTypeObject; 11],
    slots: [[isize; 10]; 11],
    state_t: *mut PyTypeObject,
    decision_t: *mut PyTypeObject,
    recent_t: *mut PyTypeObject,
    previous_t: *mut PyTypeObject,
    effect: [P; 2],
    status: [P; 7],
    outcome: [P; 25],
    kind: [P; 11],
    prev_header: Vec<u8>,
    py_decode: P,
    py_fold: P,
    fp_cache: P,
    hb: P,
    empty: P,
    minus_one: P,
    one: P,
    body_names: [P; 11],
}
static mut GP: *const G = std::ptr::null();
static mut FALLBACK_READ: u64 = 0;
static mut FALLBACK_FOLD: u64 = 0;
static mut CALLS_READ: u64 = 0;
static mut CALLS_FOLD: u64 = 0;

#[inline(always)]
fn g() -> &'static G {
    unsafe { &*GP }
}

// --- small helpers -------------------------------------------------------------------------

#[inline(always)]
unsafe fn inc(p: P) -> P {
    ffi::Py_INCREF(p);
    p
}
#[inline(always)]
unsafe fn none() -> P {
    inc(ffi::Py_None())
}
#[inline(always)]
unsafe fn is_none(p: P) -> bool {
    p == ffi::Py_None()
}
#[inline(always)]
unsafe fn pybool(b: bool) -> P {
    inc(if b { ffi::Py_True() } else { ffi::Py_False() })
}
#[inline(always)]
unsafe fn item(t: P, i: usize) -> P {
    ffi::PyTuple_GET_ITEM(t, i as Py_ssize_t)
}
#[inline(always)]
unsafe fn slot(obj: P, off: isize) -> P {
    *((obj as *mut u8).offset(off) as *mut P)
}
#[inline(always)]
unsafe fn set_slot(obj: P, off: isize, v: P) {
    *((obj as *mut u8).offset(off) as *mut P) = v;
}
/// A NamedTuple (tuple subtype) of `n` items, all NULL: fill with `PyTuple_SET_ITEM`.
#[inline(always)]
unsafe fn alloc_tuple(tp: *mut PyTypeObject, n: usize) -> P {
    ((*tp).tp_alloc.unwrap_unchecked())(tp, n as Py_ssize_t)
}
/// A NamedTuple from owned items (stolen).
#[inline(always)]
unsafe fn tuple_of(tp: *mut PyTypeObject, items: &[P]) -> P {
    let t = alloc_tuple(tp, items.len());
    for (i, v) in items.iter().enumerate() {
        ffi::PyTuple_SET_ITEM(t, i as Py_ssize_t, *v);
    }
    t
}
#[inline(always)]
unsafe fn pair(a: P, b: P) -> P {
    let t = ffi::PyTuple_New(2);
    ffi::PyTuple_SET_ITEM(t, 0, a);
    ffi::PyTuple_SET_ITEM(t, 1, b);
    t
}
#[inline(always)]
unsafe fn long(v: i64) -> P {
    ffi::PyLong_FromLongLong(v)
}
unsafe fn as_i64(p: P) -> Result<i64, Fb> {
    let v = ffi::PyLong_AsLongLong(p);
    if v == -1 && !ffi::PyErr_Occurred().is_null() {
        return Err(Fb::Err);
    }
    Ok(v)
}
#[inline(always)]
unsafe fn streq(a: P, b: P) -> bool {
    if a == b {
        return true;
    }
    let n = ffi::PyUnicode_GET_LENGTH(a);
    if n != ffi::PyUnicode_GET_LENGTH(b) {
        return false;
    }
    ffi::PyUnicode_Compare(a, b) == 0
}
/// A str from bytes: ASCII copied straight into a new compact str, else the UTF-8 decoder
/// (strict, as `bytes.decode()`); NULL (error set) on invalid UTF-8.
#[inline(always)]
unsafe fn mk_str(s: &[u8]) -> P {
    if s.is_ascii() {
        let o = ffi::PyUnicode_New(s.len() as Py_ssize_t, 127);
        if !o.is_null() && !s.is_empty() {
            std::ptr::copy_nonoverlapping(s.as_ptr(), ffi::PyUnicode_DATA(o) as *mut u8, s.len());
        }
        o
    } else {
        ffi::PyUnicode_DecodeUTF8(s.as_ptr() as *const _, s.len() as Py_ssize_t, c"strict".as_ptr())
    }
}
#[inline(always)]
unsafe fn mk_bytes(s: &[u8]) -> P {
    ffi::PyBytes_FromStringAndSize(s.as_ptr() as *const _, s.len() as Py_ssize_t)
}
unsafe fn bytes_of(p: P) -> &'static [u8] {
    std::slice::from_raw_parts(ffi::PyBytes_AS_STRING(p) as *const u8, ffi::Py_SIZE(p) as usize)
}
fn sha256_hex(data: &[u8]) -> [u8; 64] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let d = Sha256::digest(data);
    let mut out = [0u8; 64];
    for (i, b) in d.iter().enumerate() {
        out[2 * i] = HEX[(b >> 4) as usize];
        out[2 * i + 1] = HEX[(b & 15) as usize];
    }
    out
}

/// An owned reference, released on drop.
struct Own(P);
impl Drop for Own {
    fn drop(&mut self) {
        unsafe { ffi::Py_XDECREF(self.0) }
    }
}

enum Fb {
    /// Outside the prototype's subset: the Python fold judges.
    Fallback,
    /// A Python exception is set.
    Err,
}
type R = Result<P, Fb>;

#[inline(always)]
unsafe fn ok(p: P) -> R {
    if p.is_null() {
        Err(Fb::Err)
    } else {
        Ok(p)
    }
}

// --- the reader --------------------------------------------------------------------------

struct Rd<'a> {
    d: &'a [u8],
    p: usize,
}

impl<'a> Rd<'a> {
    #[inline(always)]
    fn byte(&mut self) -> Option<u8> {
        let b = *self.d.get(self.p)?;
        self.p += 1;
        Some(b)
    }
    /// Avro long, as the generated Python reader reads it (unsure past 64 bits).
    #[inline(always)]
    fn long(&mut self) -> Option<i64> {
        let b = self.byte()?;
        if b < 0x80 {
            return Some(((b >> 1) as i64) ^ -((b & 1) as i64));
        }
        let mut n: u128 = (b & 0x7f) as u128;
        let mut shift = 7;
        loop {
            let b = self.byte()?;
            n |= ((b & 0x7f) as u128) << shift;
            if b < 0x80 {
                break;
            }
            shift += 7;
            if shift > 63 {
                return None;
            }
        }
        if n >> 64 != 0 {
            return None;
        }
        let n = n as u64;
        Some(((n >> 1) as i64) ^ -((n & 1) as i64))
    }
    #[inline(always)]
    fn int(&mut self) -> Option<i64> {
        let v = self.long()?;
        (i32::MIN as i64..=i32::MAX as i64).contains(&v).then_some(v)
    }
    #[inline(always)]
    fn raw(&mut self) -> Option<&'a [u8]> {
        let n = self.long()?;
        if n < 0 {
            return None;
        }
        let end = self.p.checked_add(n as usize)?;
        let s = self.d.get(self.p..end)?;
        self.p = end;
        Some(s)
    }
    #[inline(always)]
    fn boolean(&mut self) -> Option<bool> {
        match self.byte()? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }
    #[inline(always)]
    fn effect(&mut self) -> Option<usize> {
        let b = self.byte()?;
        (b & 1 == 0 && b < 4).then_some((b >> 1) as usize)
    }
    /// A ["null", T] union: Some(None) for null.
    #[inline(always)]
    fn opt<T>(&mut self, f: impl FnOnce(&mut Self) -> Option<T>) -> Option<Option<T>> {
        match self.byte()? {
            0 => Some(None),
            2 => Some(Some(f(self)?)),
            _ => None,
        }
    }
}

/// A field of a body, parsed, not yet a Python object.
#[derive(Clone, Copy)]
enum F<'a> {
    Str(&'a [u8]),
    Bytes(&'a [u8]),
    Long(i64),
    Bool(bool),
    Effect(usize),
    OptStr(Option<&'a [u8]>),
    OptLong(Option<i64>),
}

struct Parsed<'a> {
    head: [&'a [u8]; 4],
    token: Option<&'a [u8]>,
    body: usize,
    fields: [F<'a>; 10],
    nfields: usize,
    reply: Option<i64>,
    reconciled: Option<&'a [u8]>,
}

fn parse(data: &[u8], start: usize) -> Option<Parsed<'_>> {
    let mut r = Rd { d: data, p: start };
    let head = [r.raw()?, r.raw()?, r.raw()?, r.raw()?];
    let token = r.opt(|r| r.raw())?;
    let branch = r.byte()?;
    if branch & 1 != 0 || branch > 16 {
        return None;
    }
    let body = (branch >> 1) as usize;
    let mut fields = [F::Long(0); 10];
    let n = match body {
        B_CLAIM => {
            fields[0] = F::Str(r.raw()?);
            fields[1] = F::Bytes(r.raw()?);
            fields[2] = F::Str(r.raw()?);
            fields[3] = F::Long(r.long()?);
            fields[4] = F::Long(r.long()?);
            fields[5] = F::Effect(r.effect()?);
            fields[6] = F::Str(r.raw()?);
            7
        }
        B_HEARTBEAT => {
            fields[0] = F::OptLong(r.opt(|r| r.long())?);
            1
        }
        B_COMPLETE => {
            fields[0] = F::Bytes(r.raw()?);
            1
        }
        B_FAIL => {
            fields[0] = F::Str(r.raw()?);
            fields[1] = F::Bool(r.boolean()?);
            2
        }
        B_CANCEL => {
            fields[0] = F::OptStr(r.opt(|r| r.raw())?);
            1
        }
        B_INHERIT => {
            fields[0] = F::Str(r.raw()?);
            fields[1] = F::Long(r.int()?);
            fields[2] = F::Long(r.long()?);
            fields[3] = F::Str(r.raw()?);
            fields[4] = F::Bytes(r.raw()?);
            fields[5] = F::Str(r.raw()?);
            fields[6] = F::Effect(r.effect()?);
            fields[7] = F::Bytes(r.raw()?);
            fields[8] = F::Long(r.long()?);
            fields[9] = F::Bool(r.boolean()?);
            10
        }
        _ => 0, // Release, Sweep, Get: no fields
    };
    let reply = r.opt(|r| r.int())?;
    let reconciled = r.opt(|r| r.raw())?;
    if r.p != data.len() {
        return None;
    }
    Some(Parsed { head, token, body, fields, nfields: n, reply, reconciled })
}

unsafe fn field_obj(f: F) -> P {
    match f {
        F::Str(s) => mk_str(s),
        F::Bytes(s) => mk_bytes(s),
        F::Long(v) => long(v),
        F::Bool(b) => pybool(b),
        F::Effect(i) => inc(g().effect[i]),
        F::OptStr(None) | F::OptLong(None) => none(),
        F::OptStr(Some(s)) => mk_str(s),
        F::OptLong(Some(v)) => long(v),
    }
}

/// The Request model; NULL with an error set (invalid UTF-8: the caller falls back).
unsafe fn build(p: &Parsed) -> P {
    let g = g();
    let req = alloc_tuple(g.request_t, 9);
    if req.is_null() {
        return req;
    }
    macro_rules! put {
        ($i:expr, $v:expr) => {{
            let v = $v;
            if v.is_null() {
                ffi::Py_DECREF(req);
                return null_mut();
            }
            ffi::PyTuple_SET_ITEM(req, $i, v);
        }};
    }
    for i in 0..4 {
        put!(i as Py_ssize_t, mk_str(p.head[i]));
    }
    put!(
        4,
        match p.token {
            None => none(),
            Some(s) => mk_str(s),
        }
    );
    let tp = g.bodies[p.body];
    let body = ((*tp).tp_alloc.unwrap_unchecked())(tp, 0);
    put!(5, body);
    let offs = &g.slots[p.body];
    for i in 0..p.nfields {
        let v = field_obj(p.fields[i]);
        if v.is_null() {
            ffi::Py_DECREF(req);
            return null_mut();
        }
        set_slot(body, offs[i], v);
    }
    put!(
        6,
        match p.reply {
            None => none(),
            Some(v) => long(v),
        }
    );
    put!(
        7,
        match p.reconciled {
            None => none(),
            Some(s) => mk_str(s),
        }
    );
    put!(8, none());
    req
}

/// `read_request(data)`: as `oncelog.schemas.codec.decode_request` (which it calls for any
/// record but the previous layout's that it reads in full).
#[pyfunction]
fn read_request(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<PyObject> {
    unsafe {
        let g = g();
        CALLS_READ += 1;
        let d = data.as_ptr();
        if ffi::PyBytes_CheckExact(d) != 0 {
            let buf = bytes_of(d);
            if buf.starts_with(&g.prev_header) {
                if let Some(parsed) = parse(buf, g.prev_header.len()) {
                    let r = build(&parsed);
                    if !r.is_null() {
                        return Ok(PyObject::from_owned_ptr(py, r));
                    }
                    ffi::PyErr_Clear();
                }
            }
        }
        FALLBACK_READ += 1;
        let r = ffi::PyObject_CallOneArg(g.py_decode, d);
        if r.is_null() {
            Err(PyErr::fetch(py))
        } else {
            Ok(PyObject::from_owned_ptr(py, r))
        }
    }
}

// --- the fold (subset) --------------------------------------------------------------------

/// What one call judges: the request, its body, log time.
struct Cx {
    req: P,
    body: P,
    b: usize,
    t: P,
    tv: i64,
}

impl Cx {
    #[inline(always)]
    unsafe fn field(&self, i: usize) -> P {
        slot(self.body, g().slots[self.b][i])
    }
}

/// A decision's optional fields (borrowed; NULL: the default).
struct Detail {
    epoch: P,
    retried: bool,
    stored_hash: P,
    request_hash: P,
    result: P,
    error: P,
    suspected: bool,
    previous: P,
}
const NO_DETAIL: Detail = Detail {
    epoch: null_mut(),
    retried: false,
    stored_hash: null_mut(),
    request_hash: null_mut(),
    result: null_mut(),
    error: null_mut(),
    suspected: false,
    previous: null_mut(),
};

#[inline(always)]
unsafe fn opt(p: P) -> P {
    if p.is_null() {
        none()
    } else {
        inc(p)
    }
}

/// verdicts.decide: a Decision reporting `state` (borrowed, may be None).
unsafe fn decide(state: P, cx: &Cx, outcome: P, changed: bool, d: &Detail) -> P {
    let g = g();
    let epoch = if !d.epoch.is_null() {
        inc(d.epoch)
    } else if is_none(state) {
        none()
    } else {
        inc(item(state, S_EPOCH))
    };
    tuple_of(
        g.decision_t,
        &[
            inc(item(cx.req, 0)),
            inc(item(cx.req, 1)),
            inc(g.kind[cx.b]),
            inc(outcome),
            pybool(changed),
            inc(cx.t),
            inc(state),
            epoch,
            pybool(d.retried),
            opt(d.stored_hash),
            opt(d.request_hash),
            opt(d.result),
            opt(d.error),
            pybool(d.suspected),
            opt(d.previous),
            inc(g.minus_one),
            inc(g.minus_one),
        ],
    )
}

#[inline(always)]
unsafe fn answer(state: P, cx: &Cx, outcome: usize, d: &Detail) -> R {
    ok(pair(inc(state), decide(state, cx, g().outcome[outcome], false, d)))
}

#[inline(always)]
unsafe fn status_of(state: P) -> usize {
    let s = item(state, S_STATUS);
    let st = &g().status;
    (0..7).find(|&i| st[i] == s).unwrap_or(usize::MAX)
}

unsafe fn answer_with_state(state: P, cx: &Cx, d: &Detail) -> R {
    match status_of(state) {
        usize::MAX => Err(Fb::Fallback),
        s => answer(state, cx, OUTCOME_OF_STATUS[s], d),
    }
}

unsafe fn stale(state: P, cx: &Cx, suspected: bool) -> R {
    answer(state, cx, O_STALE, &Detail { suspected, ..NO_DETAIL })
}

/// verdicts.payload_fingerprint (new reference).
unsafe fn payload_fingerprint(cx: &Cx) -> P {
    let g = g();
    match cx.b {
        B_HEARTBEAT => {
            let lease = cx.field(0);
            if is_none(lease) {
                inc(g.hb)
            } else {
                let s = format!("hb:{}", ffi::PyLong_AsLongLong(lease));
                mk_str(s.as_bytes())
            }
        }
        B_CLAIM => ffi::PyUnicode_Substring(cx.field(C_RHASH), 0, PAYLOAD_FP_HEX as Py_ssize_t),
        B_COMPLETE => mk_str(&sha256_hex(bytes_of(cx.field(0)))[..PAYLOAD_FP_HEX]),
        B_RELEASE | B_SWEEP => inc(g.body_names[cx.b]),
        _ => {
            let r = Own(ffi::PyObject_Repr(cx.body));
            if r.0.is_null() {
                return null_mut();
            }
            let mut n: Py_ssize_t = 0;
            let s = ffi::PyUnicode_AsUTF8AndSize(r.0, &mut n);
            if s.is_null() {
                return null_mut();
            }
            let s = std::slice::from_raw_parts(s as *const u8, n as usize);
            mk_str(&sha256_hex(s)[..PAYLOAD_FP_HEX])
        }
    }
}

/// tokens.fingerprint_of_token, memoized as the Python one is (new reference).
unsafe fn fingerprint(token: P) -> P {
    let g = g();
    let hit = ffi::PyDict_GetItemWithError(g.fp_cache, token);
    if !hit.is_null() {
        return inc(hit);
    }
    if !ffi::PyErr_Occurred().is_null() {
        return null_mut();
    }
    let mut n: Py_ssize_t = 0;
    let s = ffi::PyUnicode_AsUTF8AndSize(token, &mut n);
    if s.is_null() {
        return null_mut();
    }
    let fp =
        mk_str(&sha256_hex(std::slice::from_raw_parts(s as *const u8, n as usize))[..TOKEN_FP_HEX]);
    if ffi::PyDict_Size(g.fp_cache) >= FP_CACHE_MAX {
        ffi::PyDict_Clear(g.fp_cache);
    }
    if ffi::PyDict_SetItem(g.fp_cache, token, fp) < 0 {
        ffi::Py_DECREF(fp);
        return null_mut();
    }
    fp
}

/// verdicts._remember: `recent` plus `memo` (stolen), the aged entries other than grants dropped.
unsafe fn remember(recent: P, memo: P, tv: i64) -> R {
    let g = g();
    let n = ffi::PyTuple_GET_SIZE(recent) as usize;
    let horizon = tv - RETRY_MEMORY_MS;
    let keep_all = n == 0 || as_i64(item(item(recent, 0), 5))? > horizon;
    let mut kept: Vec<P> = Vec::with_capacity(n + 1);
    for i in 0..n {
        let r = item(recent, i);
        if keep_all
            || as_i64(item(r, 5))? > horizon
            || item(r, 1) == g.outcome[O_CLAIMED]
            || item(r, 1) == g.outcome[O_RECLAIMED]
        {
            kept.push(r);
        }
    }
    let t = ffi::PyTuple_New((kept.len() + 1) as Py_ssize_t);
    for (i, r) in kept.iter().enumerate() {
        ffi::PyTuple_SET_ITEM(t, i as Py_ssize_t, inc(*r));
    }
    ffi::PyTuple_SET_ITEM(t, kept.len() as Py_ssize_t, memo);
    ok(t)
}

/// verdicts.commit: a new state version (`changes` are owned, stolen) and a changed decision.
unsafe fn commit(
    state: P,
    cx: &Cx,
    fp: P,
    outcome: usize,
    changes: &[(usize, P)],
    d: &Detail,
    payload_fp: P,
) -> R {
    let g = g();
    let mut vals = [null_mut(); N_STATE];
    for &(i, v) in changes {
        vals[i] = v;
    }
    let guard: Vec<Own> = changes.iter().map(|&(_, v)| Own(v)).collect();
    let epoch = if vals[S_EPOCH].is_null() { item(state, S_EPOCH) } else { vals[S_EPOCH] };
    let worker = if vals[S_WORKER].is_null() { g.empty } else { vals[S_WORKER] };
    let payload = if payload_fp.is_null() { payload_fingerprint(cx) } else { payload_fp };
    if payload.is_null() {
        return Err(Fb::Err);
    }
    let out = g.outcome[outcome];
    let memo = tuple_of(
        g.recent_t,
        &[inc(item(cx.req, 0)), inc(out), inc(epoch), inc(fp), payload, inc(cx.t), inc(worker)],
    );
    let recent = remember(item(state, S_RECENT), memo, cx.tv)?;
    let version = long(as_i64(item(state, S_VERSION))? + 1);
    let new = alloc_tuple(g.state_t, N_STATE);
    for i in 0..N_STATE {
        let v = match i {
            S_VERSION => version,
            S_RECENT => recent,
            S_UPDATED => inc(cx.t),
            _ if !vals[i].is_null() => inc(vals[i]),
            _ => inc(item(state, i)),
        };
        ffi::PyTuple_SET_ITEM(new, i as Py_ssize_t, v);
    }
    drop(guard);
    ok(pair(new, decide(new, cx, out, true, d)))
}

/// verdicts.grant_changes.
unsafe fn grant_changes(cx: &Cx, fp: P) -> Result<[(usize, P); 16], Fb> {
    let g = g();
    let lease = cx.field(C_LEASE);
    let deadline = long(cx.tv + as_i64(lease)?);
    Ok([
        (S_STATUS, inc(g.status[ST_CLAIMED])),
        (S_TOOL, inc(cx.field(C_TOOL))),
        (S_PARAMS, inc(cx.field(C_PARAMS))),
        (S_EFFECT, inc(cx.field(C_EFFECT))),
        (S_LEASE, inc(lease)),
        (S_RETENTION, inc(cx.field(C_RETENTION))),
        (S_TOKEN_FP, inc(fp)),
        (S_WORKER, inc(cx.field(C_WORKER))),
        (S_CLAIMED_AT, inc(cx.t)),
        (S_DEADLINE, deadline),
        (S_LAST_HB, none()),
        (S_CANCEL_REQ, pybool(false)),
        (S_CANCEL_REASON, none()),
        (S_ERROR, none()),
        (S_RETRYABLE, pybool(false)),
        (S_RELEASED, pybool(false)),
    ])
}

unsafe fn first_claim(cx: &Cx) -> R {
    let g = g();
    let token = item(cx.req, 4);
    if is_none(token) {
        return answer(ffi::Py_None(), cx, O_INVALID, &NO_DETAIL);
    }
    let fp = Own(fingerprint(token));
    ok(fp.0)?;
    let payload = payload_fingerprint(cx);
    ok(payload)?;
    let memo = tuple_of(
        g.recent_t,
        &[
            inc(item(cx.req, 0)),
            inc(g.outcome[O_CLAIMED]),
            inc(g.one),
            inc(fp.0),
            payload,
            inc(cx.t),
            inc(cx.field(C_WORKER)),
        ],
    );
    let recent = ffi::PyTuple_New(1);
    ffi::PyTuple_SET_ITEM(recent, 0, memo);
    let mut vals = [null_mut(); N_STATE];
    for (i, v) in grant_changes(cx, fp.0)? {
        vals[i] = v;
    }
    vals[S_OP] = inc(item(cx.req, 1));
    vals[S_CH] = inc(item(cx.req, 2));
    vals[S_KEY] = inc(item(cx.req, 3));
    vals[S_VERSION] = inc(g.one);
    vals[S_EPOCH] = inc(g.one);
    vals[S_RHASH] = inc(cx.field(C_RHASH));
    vals[S_RECENT] = recent;
    vals[S_UPDATED] = inc(cx.t);
    for v in vals.iter_mut() {
        if v.is_null() {
            *v = none();
        }
    }
    let state = tuple_of(g.state_t, &vals);
    ok(pair(state, decide(state, cx, g.outcome[O_CLAIMED], true, &NO_DETAIL)))
}

unsafe fn reclaim(state: P, cx: &Cx, fp: P) -> R {
    let g = g();
    let unknown = item(state, S_STATUS) == g.status[ST_CLAIMED]
        && item(state, S_EFFECT) == g.effect[1]
        && item(state, S_RELEASED) != ffi::Py_True();
    let previous = Own(tuple_of(
        g.previous_t,
        &[
            inc(item(state, S_EPOCH)),
            inc(item(state, S_TOKEN_FP)),
            inc(item(state, S_WORKER)),
            inc(item(state, S_CLAIMED_AT)),
            inc(item(state, S_LAST_HB)),
            inc(item(state, S_STATUS)),
            inc(item(state, S_ERROR)),
            pybool(unknown),
        ],
    ));
    let mut changes: Vec<(usize, P)> = grant_changes(cx, fp)?.to_vec();
    changes.push((S_EPOCH, long(as_i64(item(state, S_EPOCH))? + 1)));
    changes.push((S_PREVIOUS, inc(previous.0)));
    commit(
        state,
        cx,
        fp,
        O_RECLAIMED,
        &changes,
        &Detail { previous: previous.0, ..NO_DETAIL },
        null_mut(),
    )
}

unsafe fn answer_without_grant(state: P, cx: &Cx, retried: bool) -> R {
    let d = Detail { retried, ..NO_DETAIL };
    match status_of(state) {
        ST_CLAIMED => answer(state, cx, O_IN_PROGRESS, &d),
        ST_COMPLETED
            if !is_none(item(state, S_EXPIRES)) && cx.tv < as_i64(item(state, S_EXPIRES))? =>
        {
            answer(state, cx, O_REPLAYED, &Detail { result: item(state, S_RESULT), ..d })
        }
        ST_COMPLETED | ST_EXPIRED => answer(state, cx, O_RESULT_EXPIRED, &d),
        _ => answer(state, cx, O_FAILED, &Detail { error: item(state, S_ERROR), ..d }),
    }
}

unsafe fn on_claim(state: P, cx: &Cx, fp: P, max_step: i64) -> R {
    if is_none(item(cx.req, 4)) {
        return answer(state, cx, O_INVALID, &NO_DETAIL);
    }
    match status_of(state) {
        ST_AWAITING | ST_APPROVED | ST_DENIED => Err(Fb::Fallback), // approvals.py
        ST_CLAIMED => {
            if streq(fp, item(state, S_TOKEN_FP)) {
                return answer(state, cx, O_CLAIMED, &NO_DETAIL);
            }
            let grace = if item(state, S_RELEASED) == ffi::Py_True() { 0 } else { max_step };
            if cx.tv < as_i64(item(state, S_DEADLINE))? + grace {
                return commit(state, cx, fp, O_IN_PROGRESS, &[], &NO_DETAIL, null_mut());
            }
            reclaim(state, cx, fp)
        }
        ST_FAILED if item(state, S_RETRYABLE) == ffi::Py_True() => reclaim(state, cx, fp),
        _ => answer_without_grant(state, cx, false),
    }
}

unsafe fn on_heartbeat(state: P, cx: &Cx, fp: P) -> R {
    if !streq(fp, item(state, S_TOKEN_FP)) {
        return stale(state, cx, false);
    }
    if status_of(state) != ST_CLAIMED {
        return answer_with_state(state, cx, &NO_DETAIL);
    }
    let lease = if is_none(cx.field(0)) { item(state, S_LEASE) } else { cx.field(0) };
    let deadline = long(cx.tv + as_i64(lease)?);
    let mut changes = vec![(S_DEADLINE, deadline), (S_LAST_HB, inc(cx.t))];
    if item(state, S_RELEASED) == ffi::Py_True() {
        changes.push((S_RELEASED, pybool(false)));
    }
    commit(state, cx, fp, O_HEARTBEAT_OK, &changes, &NO_DETAIL, null_mut())
}

unsafe fn was_granted(state: P, fp: P) -> bool {
    let g = g();
    let previous = item(state, S_PREVIOUS);
    if !is_none(previous) && streq(item(previous, 1), fp) {
        return true;
    }
    let recent = item(state, S_RECENT);
    (0..ffi::PyTuple_GET_SIZE(recent) as usize).any(|i| {
        let r = item(recent, i);
        let o = item(r, 1);
        (o == g.outcome[O_CLAIMED] || o == g.outcome[O_RECLAIMED])
            && (streq(item(r, 3), fp) || ffi::PyUnicode_GET_LENGTH(item(r, 3)) == 0)
    })
}

unsafe fn duplicate_complete(state: P, cx: &Cx, retried: bool) -> R {
    let d = Detail { retried, ..NO_DETAIL };
    let result = cx.field(0);
    if status_of(state) == ST_COMPLETED {
        let eq = ffi::PyObject_RichCompareBool(result, item(state, S_RESULT), ffi::Py_EQ);
        if eq < 0 {
            return Err(Fb::Err);
        }
        if eq == 1 {
            return answer(state, cx, O_COMPLETED, &Detail { result: item(state, S_RESULT), ..d });
        }
    }
    let requested = Own(mk_str(&sha256_hex(bytes_of(result))));
    let stored = item(state, S_RESULT_HASH);
    if !is_none(stored) && streq(requested.0, stored) {
        return answer_with_state(state, cx, &d);
    }
    answer(state, cx, O_CONFLICT, &Detail { stored_hash: stored, request_hash: requested.0, ..d })
}

unsafe fn on_complete(state: P, cx: &Cx, fp: P) -> R {
    let g = g();
    if !streq(fp, item(state, S_TOKEN_FP)) {
        return stale(state, cx, was_granted(state, fp));
    }
    match status_of(state) {
        ST_CLAIMED => {
            let result = cx.field(0);
            let hex = sha256_hex(bytes_of(result));
            let result_hash = mk_str(&hex);
            let payload = mk_str(&hex[..PAYLOAD_FP_HEX]);
            let expires = long(cx.tv + as_i64(item(state, S_RETENTION))?);
            commit(
                state,
                cx,
                fp,
                O_COMPLETED,
                &[
                    (S_STATUS, inc(g.status[ST_COMPLETED])),
                    (S_RESULT, inc(result)),
                    (S_RESULT_HASH, result_hash),
                    (S_COMPLETED_AT, inc(cx.t)),
                    (S_EXPIRES, expires),
                ],
                &Detail { result, ..NO_DETAIL },
                payload,
            )
        }
        ST_FAILED => answer_with_state(state, cx, &NO_DETAIL),
        _ => duplicate_complete(state, cx, false),
    }
}

unsafe fn on_fail(state: P, cx: &Cx, fp: P) -> R {
    if !streq(fp, item(state, S_TOKEN_FP)) {
        return stale(state, cx, false);
    }
    if status_of(state) != ST_CLAIMED {
        return answer_with_state(state, cx, &NO_DETAIL);
    }
    let (error, retryable) = (cx.field(0), cx.field(1));
    commit(
        state,
        cx,
        fp,
        O_FAILED,
        &[
            (S_STATUS, inc(g().status[ST_FAILED])),
            (S_ERROR, inc(error)),
            (S_RETRYABLE, inc(retryable)),
        ],
        &Detail { error, ..NO_DETAIL },
        null_mut(),
    )
}

unsafe fn on_release(state: P, cx: &Cx, fp: P) -> R {
    if !streq(fp, item(state, S_TOKEN_FP)) {
        return stale(state, cx, false);
    }
    if status_of(state) != ST_CLAIMED {
        return answer_with_state(state, cx, &NO_DETAIL);
    }
    let changes = [(S_DEADLINE, inc(cx.t)), (S_RELEASED, pybool(true))];
    commit(state, cx, fp, O_RELEASED, &changes, &NO_DETAIL, null_mut())
}

unsafe fn on_cancel(state: P, cx: &Cx, fp: P) -> R {
    if status_of(state) != ST_CLAIMED {
        return answer_with_state(state, cx, &NO_DETAIL);
    }
    if item(state, S_CANCEL_REQ) == ffi::Py_True() {
        return answer(state, cx, O_CANCEL_REQUESTED, &NO_DETAIL);
    }
    let changes = [(S_CANCEL_REQ, pybool(true)), (S_CANCEL_REASON, inc(cx.field(0)))];
    commit(state, cx, fp, O_CANCEL_REQUESTED, &changes, &NO_DETAIL, null_mut())
}

unsafe fn on_sweep(state: P, cx: &Cx, fp: P) -> R {
    let expires = item(state, S_EXPIRES);
    if status_of(state) != ST_COMPLETED || is_none(expires) || as_i64(expires)? > cx.tv {
        return answer_with_state(state, cx, &NO_DETAIL);
    }
    let changes = [(S_STATUS, inc(g().status[ST_EXPIRED])), (S_RESULT, none())];
    commit(state, cx, fp, O_EXPIRED, &changes, &NO_DETAIL, null_mut())
}

unsafe fn is_retry(seen: P, fp: P, cx: &Cx) -> Result<bool, Fb> {
    let seen_fp = item(seen, 3);
    if ffi::PyUnicode_GET_LENGTH(seen_fp) != 0 && !streq(seen_fp, fp) {
        return Ok(false);
    }
    let seen_payload = item(seen, 4);
    if ffi::PyUnicode_GET_LENGTH(seen_payload) == 0 {
        return Ok(true);
    }
    let payload = Own(payload_fingerprint(cx));
    ok(payload.0)?;
    Ok(streq(seen_payload, payload.0))
}

unsafe fn retried(state: P, cx: &Cx, seen: P) -> R {
    let g = g();
    let outcome = item(seen, 1);
    if outcome == g.outcome[O_CLAIMED] || outcome == g.outcome[O_RECLAIMED] {
        let same = ffi::PyObject_RichCompareBool(item(state, S_EPOCH), item(seen, 2), ffi::Py_EQ);
        if same < 0 {
            return Err(Fb::Err);
        }
        if status_of(state) == ST_CLAIMED && same == 1 {
            let d = Detail { retried: true, ..NO_DETAIL };
            return ok(pair(inc(state), decide(state, cx, outcome, false, &d)));
        }
        return answer_without_grant(state, cx, true);
    }
    if outcome == g.outcome[O_COMPLETED] && cx.b == B_COMPLETE {
        return duplicate_complete(state, cx, true);
    }
    let d = Detail { retried: true, epoch: item(seen, 2), ..NO_DETAIL };
    ok(pair(inc(state), decide(state, cx, outcome, false, &d)))
}

unsafe fn fold_inner(state: P, req: P, t: P, max_step: i64) -> R {
    let g = g();
    if ffi::Py_TYPE(req) != g.request_t || ffi::PyLong_CheckExact(t) == 0 {
        return Err(Fb::Fallback);
    }
    let body = item(req, 5);
    let tp = ffi::Py_TYPE(body);
    let b = match g.bodies.iter().position(|&x| x == tp) {
        Some(b) => b,
        None => return Err(Fb::Fallback),
    };
    let cx = Cx { req, body, b, t, tv: as_i64(t)? };
    if is_none(state) {
        return match b {
            B_CLAIM if is_none(item(req, 8)) => first_claim(&cx),
            B_CLAIM | B_INHERIT => Err(Fb::Fallback), // approvals.first_intent, inherits.first_inherit
            _ => answer(state, &cx, O_ABSENT, &NO_DETAIL),
        };
    }
    if ffi::Py_TYPE(state) != g.state_t {
        return Err(Fb::Fallback);
    }
    if b == B_CLAIM && !streq(cx.field(C_RHASH), item(state, S_RHASH)) {
        let d = Detail {
            stored_hash: item(state, S_RHASH),
            request_hash: cx.field(C_RHASH),
            ..NO_DETAIL
        };
        return answer(state, &cx, O_CONFLICT, &d);
    }
    let token = item(req, 4);
    let fp = Own(if is_none(token) { inc(g.empty) } else { fingerprint(token) });
    ok(fp.0)?;
    let request_id = item(req, 0);
    let recent = item(state, S_RECENT);
    for i in 0..ffi::PyTuple_GET_SIZE(recent) as usize {
        let seen = item(recent, i);
        if streq(item(seen, 0), request_id)
            && item(seen, 1) != g.outcome[O_AWAITING]
            && is_retry(seen, fp.0, &cx)?
        {
            return retried(state, &cx, seen);
        }
    }
    match b {
        B_CLAIM => on_claim(state, &cx, fp.0, max_step),
        B_HEARTBEAT => on_heartbeat(state, &cx, fp.0),
        B_COMPLETE => on_complete(state, &cx, fp.0),
        B_FAIL => on_fail(state, &cx, fp.0),
        B_RELEASE => on_release(state, &cx, fp.0),
        B_CANCEL => on_cancel(state, &cx, fp.0),
        B_SWEEP => on_sweep(state, &cx, fp.0),
        B_GET => answer_with_state(state, &cx, &NO_DETAIL),
        _ => Err(Fb::Fallback), // inherits.on_inherit, approvals.on_decide
    }
}

/// `fold(state, request, log_time_ms, max_clock_step_ms=0, signed=False)`: as
/// `oncelog.referee.fold.fold`, which it calls for whatever is outside the subset.
#[pyfunction]
#[pyo3(signature = (state, request, log_time_ms, max_clock_step_ms=0, signed=false))]
fn fold(
    py: Python<'_>,
    state: &Bound<'_, PyAny>,
    request: &Bound<'_, PyAny>,
    log_time_ms: &Bound<'_, PyAny>,
    max_clock_step_ms: i64,
    signed: bool,
) -> PyResult<PyObject> {
    unsafe {
        CALLS_FOLD += 1;
        let (s, r, t) = (state.as_ptr(), request.as_ptr(), log_time_ms.as_ptr());
        match fold_inner(s, r, t, max_clock_step_ms) {
            Ok(p) => Ok(PyObject::from_owned_ptr(py, p)),
            Err(Fb::Err) => Err(PyErr::fetch(py)),
            Err(Fb::Fallback) => {
                if !ffi::PyErr_Occurred().is_null() {
                    return Err(PyErr::fetch(py));
                }
                FALLBACK_FOLD += 1;
                let args = [s, r, t, long(max_clock_step_ms), pybool(signed)];
                let out = ffi::PyObject_Vectorcall(g().py_fold, args.as_ptr(), 5, null_mut());
                ffi::Py_DECREF(args[3]);
                ffi::Py_DECREF(args[4]);
                if out.is_null() {
                    Err(PyErr::fetch(py))
                } else {
                    Ok(PyObject::from_owned_ptr(py, out))
                }
            }
        }
    }
}

/// Calls, and how many of them were handed to Python: (reads, read fallbacks, folds, fold fallbacks).
#[pyfunction]
fn stats() -> (u64, u64, u64, u64) {
    unsafe { (CALLS_READ, FALLBACK_READ, CALLS_FOLD, FALLBACK_FOLD) }
}

// --- import ----------------------------------------------------------------------------

#[repr(C)]
struct MemberDescr {
    common: ffi::PyDescrObject,
    member: *mut ffi::PyMemberDef,
}

fn check_fields(cls: &Bound<'_, PyAny>, expected: &[&str]) -> PyResult<()> {
    let fields: Vec<String> = cls.getattr("_fields")?.extract()?;
    if fields != expected {
        return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
            "the prototype's field list is stale: {fields:?}"
        )));
    }
    Ok(())
}

fn members(cls: &Bound<'_, PyAny>) -> PyResult<Vec<P>> {
    let out: Vec<Bound<'_, PyAny>> = cls.try_iter()?.collect::<PyResult<_>>()?;
    Ok(out.into_iter().map(|m| m.into_ptr()).collect())
}

#[pymodule]
fn _oncelog_proto(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let models = py.import("oncelog.schemas.models")?;
    let codec = py.import("oncelog.schemas.codec")?;
    let foldm = py.import("oncelog.referee.fold")?;
    let dataclasses = py.import("dataclasses")?;
    let ty = |name: &str| -> PyResult<*mut PyTypeObject> {
        Ok(models.getattr(name)?.into_ptr() as *mut PyTypeObject)
    };
    check_fields(&models.getattr("ExecutionState")?, &STATE_FIELDS)?;
    check_fields(&models.getattr("Decision")?, &DECISION_FIELDS)?;
    check_fields(&models.getattr("Request")?, &REQUEST_FIELDS)?;
    check_fields(&models.getattr("RecentRequest")?, &RECENT_FIELDS)?;
    check_fields(&models.getattr("PreviousAttempt")?, &PREVIOUS_FIELDS)?;
    let mut bodies = [null_mut(); 11];
    let mut slots = [[0isize; 10]; 11];
    for (i, name) in BODY_NAMES.iter().enumerate() {
        let cls = models.getattr(*name)?;
        for (j, f) in dataclasses.call_method1("fields", (&cls,))?.try_iter()?.enumerate() {
            let fname: String = f?.getattr("name")?.extract()?;
            let desc = cls.getattr(fname.as_str())?;
            let tname: String = desc.get_type().name()?.extract()?;
            if tname != "member_descriptor" {
                return Err(pyo3::exceptions::PyRuntimeError::new_err("a body is not slotted"));
            }
            slots[i][j] = unsafe { (*(*(desc.as_ptr() as *mut MemberDescr)).member).offset };
        }
        bodies[i] = cls.into_ptr() as *mut PyTypeObject;
    }
    let effect = members(&models.getattr("Effect")?)?;
    let status = members(&models.getattr("Status")?)?;
    let outcome = members(&models.getattr("Outcome")?)?;
    let kind = members(&models.getattr("Kind")?)?;
    let prev_header: Vec<u8> = codec.getattr("_PREV_REQUEST_HEADER")?.extract()?;
    let s = |v: &str| pyo3::types::PyString::new(py, v).into_any().into_ptr();
    let mut body_names = [null_mut(); 11];
    for (i, name) in BODY_NAMES.iter().enumerate() {
        body_names[i] = s(name);
    }
    let glob = G {
        request_t: ty("Request")?,
        bodies,
        slots,
        state_t: ty("ExecutionState")?,
        decision_t: ty("Decision")?,
        recent_t: ty("RecentRequest")?,
        previous_t: ty("PreviousAttempt")?,
        effect: effect
            .try_into()
            .map_err(|_| pyo3::exceptions::PyRuntimeError::new_err("Effect"))?,
        status: status
            .try_into()
            .map_err(|_| pyo3::exceptions::PyRuntimeError::new_err("Status"))?,
        outcome: outcome
            .try_into()
            .map_err(|_| pyo3::exceptions::PyRuntimeError::new_err("Outcome"))?,
        kind: kind.try_into().map_err(|_| pyo3::exceptions::PyRuntimeError::new_err("Kind"))?,
        prev_header,
        py_decode: codec.getattr("decode_request")?.into_ptr(),
        py_fold: foldm.getattr("fold")?.into_ptr(),
        fp_cache: pyo3::types::PyDict::new(py).into_any().into_ptr(),
        hb: s("hb"),
        empty: s(""),
        minus_one: (-1i64).into_pyobject(py)?.into_any().into_ptr(),
        one: 1i64.into_pyobject(py)?.into_any().into_ptr(),
        body_names,
    };
    unsafe {
        GP = Box::into_raw(Box::new(glob));
    }
    m.add_function(wrap_pyfunction!(read_request, m)?)?;
    m.add_function(wrap_pyfunction!(fold, m)?)?;
    m.add_function(wrap_pyfunction!(stats, m)?)?;
    Ok(())
}
