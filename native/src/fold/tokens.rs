//! Token fingerprints (`oncelog.identity.tokens`): the first 32 hex digits of the SHA-256
//! of the token's UTF-8, memoized as `fingerprint_of_token` is.
//!
//! The memo holds exact `str` tokens, up to the Python memo's size; when full it is
//! emptied (the Python one drops its least recent entry): a memo changes the cost, never
//! the fingerprint.

use super::model::{model, TOKEN_FP_HEX};
use super::values::sha256_hex_of;
use crate::objects::{self, Fallible, Owned, Raised, P};
use pyo3::ffi::{self, Py_ssize_t};

/// The Python memo's size (`functools.lru_cache(maxsize=4096)`).
const MEMO_SIZE: Py_ssize_t = 4096;

/// `fingerprint_of_token(token)`: a new reference. A token that is not a `str` is a
/// TypeError (the compiled `fingerprint_of_token` checks its argument the same way).
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
