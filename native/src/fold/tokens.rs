//! Token fingerprints (docs/spec.md §8): the first `TOKEN_FP_HEX` hex digits of the SHA-256
//! of the token's UTF-8, as `oncelog.identity.tokens.fingerprint_of_token` makes them. The
//! fold compares fingerprints, never tokens: the state never holds one.
//!
//! An attempt's claim, heartbeats and completion repeat its token, and every request is
//! fingerprinted, so they are memoized: the memo holds exact `str` tokens, up to `MEMO_SIZE`,
//! and is emptied when full. A memo changes the cost, never the fingerprint.

use super::model::{model, TOKEN_FP_HEX};
use super::values::sha256_hex_of;
use crate::objects::{self, Fallible, Owned, Raised, P};
use pyo3::ffi::{self, Py_ssize_t};

/// The tokens the memo holds before it is emptied: sized to the attempts in flight, as
/// `fingerprint_of_token`'s own memo is.
const MEMO_SIZE: Py_ssize_t = 4096;

/// The fingerprint of `token`, a new reference. A token that is not a `str` is a TypeError.
pub unsafe fn fingerprint(token: P) -> Fallible<Owned> {
    let memo = model().fp_memo;
    let exact = ffi::PyUnicode_CheckExact(token) != 0;
    if exact {
        let hit = ffi::PyDict_GetItemWithError(memo, token);
        if !hit.is_null() {
            return Ok(Owned::share(hit));
        }
        if !ffi::PyErr_Occurred().is_null() {
            return Err(Raised);
        }
    } else if ffi::PyUnicode_Check(token) == 0 {
        let message = format!("a claim token is a str, not {}", objects::type_name(token));
        return Err(objects::raise(ffi::PyExc_TypeError, &message));
    }
    // token.encode(): strict UTF-8, UnicodeEncodeError on a lone surrogate.
    let mut n: Py_ssize_t = 0;
    let utf8 = ffi::PyUnicode_AsUTF8AndSize(token, &mut n);
    if utf8.is_null() {
        return Err(Raised);
    }
    let hex = sha256_hex_of(std::slice::from_raw_parts(utf8 as *const u8, n as usize));
    let fp = Owned::take(objects::text(&hex[..TOKEN_FP_HEX]))?;
    if exact {
        if ffi::PyDict_Size(memo) >= MEMO_SIZE {
            ffi::PyDict_Clear(memo);
        }
        if ffi::PyDict_SetItem(memo, token, fp.ptr()) < 0 {
            return Err(Raised);
        }
    }
    Ok(fp)
}
