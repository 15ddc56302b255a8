//! CPython objects made and filled without a Python call: the models' own layouts.
//!
//! Every function returns a new reference, or NULL with a Python exception set (or, for the
//! string maker, NULL after clearing it: invalid UTF-8 is the caller's doubt, not an error).

use pyo3::ffi::{self, PyTypeObject, Py_ssize_t};

pub type P = *mut ffi::PyObject;

/// An owned reference, released when dropped.
pub struct Owned(pub P);

impl Drop for Owned {
    fn drop(&mut self) {
        unsafe { ffi::Py_XDECREF(self.0) }
    }
}

#[inline(always)]
pub unsafe fn new_ref(p: P) -> P {
    ffi::Py_INCREF(p);
    p
}

#[inline(always)]
pub unsafe fn boolean(b: bool) -> P {
    new_ref(if b { ffi::Py_True() } else { ffi::Py_False() })
}

/// A `str` of UTF-8 bytes, decoded strictly as `bytes.decode()` does; ASCII is copied
/// straight into a new compact string. NULL, with no exception left set, on invalid UTF-8.
#[inline(always)]
pub unsafe fn text(s: &[u8]) -> P {
    if s.is_ascii() {
        let o = ffi::PyUnicode_New(s.len() as Py_ssize_t, 127);
        if !o.is_null() && !s.is_empty() {
            std::ptr::copy_nonoverlapping(s.as_ptr(), ffi::PyUnicode_DATA(o) as *mut u8, s.len());
        }
        return o;
    }
    let o = ffi::PyUnicode_DecodeUTF8(s.as_ptr().cast(), s.len() as Py_ssize_t, c"strict".as_ptr());
    if o.is_null() {
        ffi::PyErr_Clear();
    }
    o
}

#[inline(always)]
pub unsafe fn bytes(s: &[u8]) -> P {
    ffi::PyBytes_FromStringAndSize(s.as_ptr().cast(), s.len() as Py_ssize_t)
}

/// An instance of `tp` with `n` item slots, as `tp.__new__` allocates it before filling
/// (a tuple subtype: `n` NULL items; a slotted class: `n` = 0, every slot NULL).
#[inline(always)]
pub unsafe fn allocate(tp: *mut PyTypeObject, n: usize) -> P {
    match (*tp).tp_alloc {
        Some(alloc) => alloc(tp, n as Py_ssize_t),
        None => ffi::PyType_GenericAlloc(tp, n as Py_ssize_t),
    }
}

/// Store the owned `value` in the empty slot at byte `offset` of `obj` (what a member
/// descriptor's `__set__` does to a fresh instance).
#[inline(always)]
pub unsafe fn fill_slot(obj: P, offset: isize, value: P) {
    *((obj as *mut u8).offset(offset) as *mut P) = value;
}

/// The layout of a member descriptor (`PyMemberDescrObject`), for its slot's offset.
#[repr(C)]
struct MemberDescr {
    common: ffi::PyDescrObject,
    member: *mut ffi::PyMemberDef,
}

/// Python's `T_OBJECT_EX`: the slot type of a class's `__slots__`.
const T_OBJECT_EX: i32 = 16;

/// The byte offset of the slot a member descriptor stands for, or None when `descr` is
/// not a member descriptor of an object slot.
pub unsafe fn slot_offset(descr: P) -> Option<isize> {
    if ffi::Py_TYPE(descr) != std::ptr::addr_of_mut!(ffi::PyMemberDescr_Type) {
        return None;
    }
    let member = (*(descr as *mut MemberDescr)).member;
    if member.is_null() || (*member).type_code != T_OBJECT_EX {
        return None;
    }
    Some((*member).offset)
}
