//! Python's operators on the models' field values, as the rules apply them.
//!
//! The fields are typed, but a model does not check its values: each operator takes the
//! direct path for the types the models declare (`str`, a 64-bit `int`, `bytes`) and
//! otherwise does what the Python operator does (`==`, `<`, `+`, truth, `hashlib`),
//! exceptions included, so an ill-typed value is judged as Python code over the models
//! would judge it, never by a rule of its own.

use crate::objects::{self, Fallible, Owned, Raised, P};
use pyo3::ffi::{self, Py_ssize_t};
use sha2::{Digest, Sha256};

/// The value of an exact `int` that fits 64 bits.
#[inline(always)]
pub unsafe fn small_int(p: P) -> Option<i64> {
    if ffi::PyLong_CheckExact(p) == 0 {
        return None;
    }
    let mut overflow = 0;
    let v = ffi::PyLong_AsLongLongAndOverflow(p, &mut overflow);
    (overflow == 0).then_some(v)
}

#[inline(always)]
unsafe fn both_str(a: P, b: P) -> bool {
    ffi::PyUnicode_CheckExact(a) != 0 && ffi::PyUnicode_CheckExact(b) != 0
}

/// Two exact `str`s' equality.
#[inline(always)]
unsafe fn str_eq(a: P, b: P) -> bool {
    a == b
        || (ffi::PyUnicode_GET_LENGTH(a) == ffi::PyUnicode_GET_LENGTH(b)
            && ffi::PyUnicode_Compare(a, b) == 0)
}

/// `bool(a <op> b)`.
unsafe fn compare(a: P, b: P, op: std::os::raw::c_int) -> Fallible<bool> {
    let r = Owned::take(ffi::PyObject_RichCompare(a, b, op))?;
    truthy(r.ptr())
}

/// `bool(p)`.
#[inline(always)]
pub unsafe fn truthy(p: P) -> Fallible<bool> {
    if p == ffi::Py_True() {
        return Ok(true);
    }
    if p == ffi::Py_False() || objects::is_none(p) {
        return Ok(false);
    }
    match ffi::PyObject_IsTrue(p) {
        -1 => Err(Raised),
        r => Ok(r == 1),
    }
}

/// `a == b`.
#[inline(always)]
pub unsafe fn eq(a: P, b: P) -> Fallible<bool> {
    if both_str(a, b) {
        return Ok(str_eq(a, b));
    }
    if let (Some(x), Some(y)) = (small_int(a), small_int(b)) {
        return Ok(x == y);
    }
    compare(a, b, ffi::Py_EQ)
}

/// `a != b`.
#[inline(always)]
pub unsafe fn ne(a: P, b: P) -> Fallible<bool> {
    if both_str(a, b) {
        return Ok(!str_eq(a, b));
    }
    compare(a, b, ffi::Py_NE)
}

/// `a in (b, ...)`'s test of one item: identity, then `==` (PyObject_RichCompareBool).
#[inline(always)]
pub unsafe fn same_or_eq(item: P, value: P) -> Fallible<bool> {
    if item == value {
        return Ok(true);
    }
    if both_str(item, value) {
        return Ok(str_eq(item, value));
    }
    match ffi::PyObject_RichCompareBool(item, value, ffi::Py_EQ) {
        -1 => Err(Raised),
        r => Ok(r == 1),
    }
}

macro_rules! ordering {
    ($name:ident, $op:tt, $py:expr, $doc:literal) => {
        #[doc = $doc]
        #[inline(always)]
        pub unsafe fn $name(a: P, b: P) -> Fallible<bool> {
            if let (Some(x), Some(y)) = (small_int(a), small_int(b)) {
                return Ok(x $op y);
            }
            compare(a, b, $py)
        }
    };
}
ordering!(lt, <, ffi::Py_LT, "`a < b`.");
ordering!(gt, >, ffi::Py_GT, "`a > b`.");
ordering!(ge, >=, ffi::Py_GE, "`a >= b`.");

/// `a + b`.
#[inline(always)]
pub unsafe fn add(a: P, b: P) -> Fallible<Owned> {
    if let (Some(x), Some(y)) = (small_int(a), small_int(b)) {
        if let Some(v) = x.checked_add(y) {
            return Owned::take(ffi::PyLong_FromLongLong(v));
        }
    }
    Owned::take(ffi::PyNumber_Add(a, b))
}

/// `a + k` (`k` a literal of the rules).
#[inline(always)]
pub unsafe fn add_int(a: P, k: i64) -> Fallible<Owned> {
    if let Some(v) = small_int(a).and_then(|x| x.checked_add(k)) {
        return Owned::take(ffi::PyLong_FromLongLong(v));
    }
    let k = Owned::take(ffi::PyLong_FromLongLong(k))?;
    Owned::take(ffi::PyNumber_Add(a, k.ptr()))
}

/// `a - k` (`k` a literal of the rules).
#[inline(always)]
pub unsafe fn sub_int(a: P, k: i64) -> Fallible<Owned> {
    if let Some(v) = small_int(a).and_then(|x| x.checked_sub(k)) {
        return Owned::take(ffi::PyLong_FromLongLong(v));
    }
    let k = Owned::take(ffi::PyLong_FromLongLong(k))?;
    Owned::take(ffi::PyNumber_Subtract(a, k.ptr()))
}

/// `s[:n]` of a `str` (or whatever `s` is, sliced as Python slices it).
#[inline(always)]
pub unsafe fn prefix(s: P, n: usize) -> Fallible<Owned> {
    if ffi::PyUnicode_CheckExact(s) != 0 {
        return Owned::take(ffi::PyUnicode_Substring(s, 0, n as Py_ssize_t));
    }
    Owned::take(ffi::PySequence_GetSlice(s, 0, n as Py_ssize_t))
}

/// SHA-256 in lowercase hex.
pub fn sha256_hex_of(data: &[u8]) -> [u8; 64] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(data);
    let mut out = [0u8; 64];
    for (i, b) in digest.iter().enumerate() {
        out[2 * i] = HEX[(b >> 4) as usize];
        out[2 * i + 1] = HEX[(b & 15) as usize];
    }
    out
}

/// The TypeError for a value not of its annotated type, in the words of a mypyc-compiled
/// function (`bytes object expected; got str`).
pub unsafe fn expected(what: &str, value: P) -> Raised {
    let got = if objects::is_none(value) { "None".to_string() } else { objects::type_name(value) };
    objects::raise(ffi::PyExc_TypeError, &format!("{what} object expected; got {got}"))
}

/// The digits of `hashlib.sha256(data).hexdigest()`. `data` is a result, `bytes`: anything
/// else is a TypeError (`expected`).
pub unsafe fn sha256_hex(data: P) -> Fallible<[u8; 64]> {
    if ffi::PyBytes_Check(data) == 0 {
        return Err(expected("bytes", data));
    }
    Ok(sha256_hex_of(objects::bytes_data(data)))
}

/// `hashlib.sha256(data).hexdigest()` as a `str`: a result's hash, as the state keeps it
/// (`result_hash`).
#[inline(always)]
pub unsafe fn sha256_text(data: P) -> Fallible<Owned> {
    let hex = sha256_hex(data)?;
    Owned::take(objects::text(&hex))
}
