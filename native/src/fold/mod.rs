//! The referee's fold on the package's models: the state machine of docs/spec.md §4.
//!
//! `fold(state, request, log_time_ms, max_clock_step_ms=0, signed=False)` judges one request
//! against the state of its operation and returns `(state_after, decision)`: the same state
//! object when nothing changed, `None` while the operation is absent, exactly one decision
//! (`judge` and `DOC` say the rest). Every rule is here: the shared verdicts (`verdicts`), the
//! per-kind rules (`rules`), approvals (`approvals`) and inherits (`inherits`).
//!
//! Pure: no clock, no randomness, no I/O, no logging. Refolding the same requests from the
//! same state therefore yields the same states and decisions byte for byte, and a state
//! restored from the last snapshot plus the tail equals the live state (docs/spec.md §3). The
//! one thing kept across calls is the token fingerprints' memo (`tokens`), which changes the
//! cost, never a value.
//!
//! The models are read and made in place (`model` finds their layouts at import and checks
//! them): a NamedTuple is allocated with its type's `tp_alloc` and filled, as `_make` makes
//! it. A model does not check its field values: one of another type than the model declares
//! goes through Python's own operator (`values`), so it compares, adds or fails as Python
//! code over the models would. The arguments themselves must be the models' exact types (a
//! Request, an ExecutionState or None, a body of one of the eleven kinds), `log_time_ms` and
//! `max_clock_step_ms` an `int` and `signed` a `bool` (`time`): anything else is a TypeError.

mod approvals;
mod inherits;
mod layout;
mod model;
mod rules;
mod tokens;
mod values;
mod verdicts;

use crate::objects::{self, is_none, item, Fallible, Owned, P};
use model::*;
use pyo3::ffi::{self, Py_ssize_t};
use pyo3::prelude::*;
use std::ffi::CStr;
use std::ptr::null_mut;
use verdicts::{answer, entry, recent_of, unchanged, Cx, Detail, NO_DETAIL};

const ARGUMENTS: [&CStr; 5] =
    [c"state", c"request", c"log_time_ms", c"max_clock_step_ms", c"signed"];

fn type_error(message: &str) -> objects::Raised {
    unsafe { objects::raise(ffi::PyExc_TypeError, message) }
}

/// `fold(state, request, log_time_ms, max_clock_step_ms=0, signed=False)`, its arguments read.
///
/// `max_step` (`max_clock_step_ms`) is the ledger's bound on a step of the leader's clock, a
/// constant of the ledger like its partition count: a lapsed lease is reclaimed only once it
/// lapsed by that much more (`rules::on_claim`). `signed`: for an approve or deny, that it is
/// signed by an approver the intent lists; the judge checks the signature outside the fold,
/// which does no cryptography, and an intent that lists approvers refuses a decision without
/// it (`approvals::on_decide`). The decision's `changed` is true only when a new state version
/// was made. Tokens are compared by fingerprint: the state never holds a token (docs/spec.md
/// §8).
unsafe fn judge(state: P, req: P, t: P, max_step: P, signed: P) -> Fallible<Owned> {
    let m = model();
    if ffi::Py_TYPE(req) != m.request || objects::size(req) != N_REQUEST {
        return Err(type_error(&format!(
            "fold() needs a Request, not {}",
            objects::type_name(req)
        )));
    }
    let body = item(req, Q_BODY);
    let body_type = ffi::Py_TYPE(body);
    let Some(kind) = m.bodies.iter().position(|&b| b == body_type) else {
        let message =
            format!("a Request's body is a request body, not {}", objects::type_name(body));
        return Err(type_error(&message));
    };
    let cx = Cx::new(req, body, kind, t);
    if is_none(state) {
        return match kind {
            B_CLAIM if !is_none(item(req, Q_APPROVAL)) => approvals::first_intent(&cx),
            B_CLAIM => rules::first_claim(&cx),
            B_INHERIT => inherits::first_inherit(&cx),
            _ => unchanged(state, &cx, O_STATE_ABSENT),
        };
    }
    if ffi::Py_TYPE(state) != m.state || objects::size(state) != N_STATE {
        let message =
            format!("fold() needs an ExecutionState or None, not {}", objects::type_name(state));
        return Err(type_error(&message));
    }
    // The conflict rule comes first: a claim with a different request_hash never takes
    // effect, whatever its id (docs/spec.md §2, "Rules").
    if kind == B_CLAIM {
        let asked = cx.field(C_REQUEST_HASH)?;
        let stored = item(state, S_REQUEST_HASH);
        if values::ne(asked, stored)? {
            let d = Detail { stored_hash: stored, request_hash: asked, ..NO_DETAIL };
            return answer(state, &cx, m.outcome[O_CONFLICT], &d);
        }
    }
    let token = item(req, Q_CLAIM_TOKEN);
    let fp = if is_none(token) { Owned::share(m.empty) } else { tokens::fingerprint(token)? };
    let request_id = item(req, Q_REQUEST_ID);
    // Every earlier request with this id counts (docs/spec.md §4): an id reused with another
    // payload took effect as new, and a re-send of that later request is its retry. A claim
    // answered `awaiting_approval` is judged again: the client that sent it waits for the
    // decision by re-sending it (same id and token).
    let recent = recent_of(state)?;
    let awaiting = m.outcome[O_AWAITING_APPROVAL];
    for i in 0..objects::size(recent) {
        let seen = entry(recent, i)?;
        if values::eq(item(seen, R_REQUEST_ID), request_id)?
            && item(seen, R_OUTCOME) != awaiting
            && rules::is_retry(seen, fp.ptr(), &cx)?
        {
            return rules::retried(state, &cx, seen);
        }
    }
    match kind {
        B_CLAIM => rules::on_claim(state, &cx, fp.ptr(), max_step),
        B_APPROVE | B_DENY => approvals::on_decide(state, &cx, fp.ptr(), signed),
        _ => rules::on_other(state, &cx, fp.ptr()),
    }
}

/// The arguments by position, from a vectorcall's positional and keyword arguments.
unsafe fn arguments(args: *const P, nargs: Py_ssize_t, kwnames: P) -> Fallible<[P; 5]> {
    let mut out = [null_mut(); 5];
    let nargs = nargs as usize;
    if nargs > out.len() {
        let message =
            format!("fold() takes from 3 to 5 positional arguments but {nargs} were given");
        return Err(type_error(&message));
    }
    for (i, slot) in out.iter_mut().enumerate().take(nargs) {
        *slot = *args.add(i);
    }
    if !kwnames.is_null() {
        for k in 0..ffi::PyTuple_GET_SIZE(kwnames) as usize {
            let name = item(kwnames, k);
            let position = ARGUMENTS.iter().position(|a| {
                ffi::PyUnicode_Check(name) != 0
                    && ffi::PyUnicode_CompareWithASCIIString(name, a.as_ptr()) == 0
            });
            let Some(i) = position else {
                let shown = Owned::take(ffi::PyObject_Repr(name))?;
                let mut n: Py_ssize_t = 0;
                let text = ffi::PyUnicode_AsUTF8AndSize(shown.ptr(), &mut n);
                let text = if text.is_null() {
                    ffi::PyErr_Clear();
                    "?".to_string()
                } else {
                    String::from_utf8_lossy(std::slice::from_raw_parts(
                        text as *const u8,
                        n as usize,
                    ))
                    .into_owned()
                };
                return Err(type_error(&format!(
                    "fold() got an unexpected keyword argument {text}"
                )));
            };
            if !out[i].is_null() {
                let name = ARGUMENTS[i].to_string_lossy();
                return Err(type_error(&format!(
                    "fold() got multiple values for argument '{name}'"
                )));
            }
            out[i] = *args.add(nargs + k);
        }
    }
    for (i, a) in out.iter().enumerate().take(3) {
        if a.is_null() {
            let name = ARGUMENTS[i].to_string_lossy();
            return Err(type_error(&format!(
                "fold() missing required argument '{name}' (pos {})",
                i + 1
            )));
        }
    }
    Ok(out)
}

unsafe extern "C" fn fold_vectorcall(
    _module: P,
    args: *const P,
    nargs: Py_ssize_t,
    kwnames: P,
) -> P {
    let a = match arguments(args, nargs, kwnames) {
        Ok(a) => a,
        Err(_) => return null_mut(),
    };
    let m = model();
    let max_step = if a[3].is_null() { m.zero } else { a[3] };
    let signed = if a[4].is_null() { ffi::Py_False() } else { a[4] };
    let t = match time(a[2], max_step, signed) {
        Ok(t) => t,
        Err(_) => return null_mut(),
    };
    match judge(a[0], a[1], t.ptr(), max_step, signed) {
        Ok(result) => result.into_ptr(),
        Err(_) => {
            debug_assert!(!ffi::PyErr_Occurred().is_null());
            null_mut()
        }
    }
}

/// The typed arguments' checks: `log_time_ms` and `max_clock_step_ms` an `int`, `signed` a
/// `bool`, each refused with the message of a mypyc-compiled function (`int object expected;
/// got str`). A log time of an `int` subtype (a `bool`) is kept as the `int` it stands for:
/// the state and the decision hold an `int`.
unsafe fn time(t: P, max_step: P, signed: P) -> Fallible<Owned> {
    for (value, expected) in [(t, "int"), (max_step, "int"), (signed, "bool")] {
        let ok =
            if expected == "int" { ffi::PyLong_Check(value) } else { ffi::PyBool_Check(value) };
        if ok == 0 {
            let got = if is_none(value) { "None".to_string() } else { objects::type_name(value) };
            return Err(type_error(&format!("{expected} object expected; got {got}")));
        }
    }
    if ffi::PyLong_CheckExact(t) != 0 {
        return Ok(Owned::share(t));
    }
    Owned::take(ffi::PyNumber_Long(t))
}

const DOC: &CStr = c"fold(state, request, log_time_ms, max_clock_step_ms=0, signed=False)
--

Judge request against state at log time log_time_ms: (state_after, decision).

max_clock_step_ms is the ledger's bound on a step of the leader's clock: a lapsed
lease is reclaimed only once it lapsed by that much more, unless it was released
(docs/spec.md §4, \"Clock steps\"). signed: for an approve or deny, that it is
signed by an approver the intent lists (the judge checks it outside the fold, which
does no cryptography); an intent that lists approvers refuses a decision without it.

Returns the state after (the same object when nothing changed; None while the
operation is absent) and exactly one decision. The decision's changed is True only
when a new state version was made. Tokens are compared by fingerprint: the state
never holds a token (docs/spec.md §8). Pure: no clock, no randomness, no I/O.";

/// Find the models (the import fails if they changed) and add `fold` and the rules'
/// constants to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    model::setup(py)?;
    let def = Box::leak(Box::new(ffi::PyMethodDef {
        ml_name: c"fold".as_ptr(),
        ml_meth: ffi::PyMethodDefPointer { PyCFunctionFastWithKeywords: fold_vectorcall },
        ml_flags: ffi::METH_FASTCALL | ffi::METH_KEYWORDS,
        ml_doc: DOC.as_ptr(),
    }));
    let name = m.name()?;
    let function = unsafe {
        Bound::from_owned_ptr_or_err(py, ffi::PyCFunction_NewEx(def, m.as_ptr(), name.as_ptr()))?
    };
    m.add("fold", function)?;
    m.add("RETRY_MEMORY_MS", RETRY_MEMORY_MS)?;
    m.add("PAYLOAD_FP_HEX", PAYLOAD_FP_HEX)?;
    m.add("TOKEN_FP_HEX", TOKEN_FP_HEX)?;
    Ok(())
}
