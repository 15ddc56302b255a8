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
/// (a tuple subtype: `n` NULL items; a slotted class: `n` = 0, every slot NULL), left out
/// of the cycle collector's lists ([`untrack`]).
#[inline(always)]
pub unsafe fn allocate(tp: *mut PyTypeObject, n: usize) -> P {
    let obj = match (*tp).tp_alloc {
        Some(alloc) => alloc(tp, n as Py_ssize_t),
        None => ffi::PyType_GenericAlloc(tp, n as Py_ssize_t),
    };
    untrack(obj)
}

/// `obj` (NULL passes through) without the cycle collector's tracking.
///
/// Only for what this module makes: the models and their tuples, immutable once filled,
/// each holding references to objects that existed before it (strings, numbers, enum
/// members, models made earlier) and never a dict or a list. Such an object cannot be part
/// of a reference cycle, so the collector has nothing to find in it, and refcounting frees
/// it as before; CPython untracks a tuple of atomic items the same way. Tracked, every
/// collection walks each one again, and a projector's cache of states holds many.
#[inline(always)]
pub unsafe fn untrack(obj: P) -> P {
    if !obj.is_null() && ffi::PyObject_IS_GC(obj) != 0 {
        ffi::PyObject_GC_UnTrack(obj.cast());
    }
    obj
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

// --- references and errors, for code that builds the models (the fold) ----------------

/// A Python exception is set: the caller hands it on (NULL to the interpreter).
pub struct Raised;

/// A result whose error is the Python exception set.
pub type Fallible<T> = Result<T, Raised>;

impl Owned {
    /// Own the new reference `p`; NULL means an exception is set.
    #[inline(always)]
    pub unsafe fn take(p: P) -> Fallible<Owned> {
        if p.is_null() {
            Err(Raised)
        } else {
            Ok(Owned(p))
        }
    }

    /// A new reference to the borrowed `p`.
    #[inline(always)]
    pub unsafe fn share(p: P) -> Owned {
        ffi::Py_INCREF(p);
        Owned(p)
    }

    #[inline(always)]
    pub fn ptr(&self) -> P {
        self.0
    }

    /// The reference, handed on (stolen by the caller).
    #[inline(always)]
    pub fn into_ptr(self) -> P {
        let p = self.0;
        std::mem::forget(self);
        p
    }
}

/// Set `exc` with `message`; the `Raised` to return.
pub unsafe fn raise(exc: P, message: &str) -> Raised {
    let text = text(message.as_bytes());
    if !text.is_null() {
        ffi::PyErr_SetObject(exc, text);
        ffi::Py_DECREF(text);
    }
    Raised
}

/// The name of `p`'s type, for messages.
pub unsafe fn type_name(p: P) -> String {
    let name = (*ffi::Py_TYPE(p)).tp_name;
    std::ffi::CStr::from_ptr(name).to_string_lossy().into_owned()
}

#[inline(always)]
pub unsafe fn is_none(p: P) -> bool {
    p == ffi::Py_None()
}

#[inline(always)]
pub unsafe fn bool_ptr(b: bool) -> P {
    if b {
        ffi::Py_True()
    } else {
        ffi::Py_False()
    }
}

/// Item `i` of the tuple (or tuple subtype) `t`, borrowed.
#[inline(always)]
pub unsafe fn item(t: P, i: usize) -> P {
    ffi::PyTuple_GET_ITEM(t, i as Py_ssize_t)
}

#[inline(always)]
pub unsafe fn size(t: P) -> usize {
    ffi::PyTuple_GET_SIZE(t) as usize
}

/// The slot at byte `offset` of `obj`, borrowed: NULL when the slot is empty.
#[inline(always)]
pub unsafe fn slot(obj: P, offset: isize) -> P {
    *((obj as *mut u8).offset(offset) as *mut P)
}

/// An instance of the NamedTuple `tp` holding a new reference to each borrowed item.
#[inline(always)]
pub unsafe fn tuple_shared(tp: *mut PyTypeObject, items: &[P]) -> Fallible<Owned> {
    let t = Owned::take(allocate(tp, items.len()))?;
    for (i, v) in items.iter().enumerate() {
        ffi::PyTuple_SET_ITEM(t.0, i as Py_ssize_t, new_ref(*v));
    }
    Ok(t)
}

/// A plain tuple holding a new reference to each borrowed item.
#[inline(always)]
pub unsafe fn plain_tuple(items: &[P]) -> Fallible<Owned> {
    let t = Owned::take(untrack(ffi::PyTuple_New(items.len() as Py_ssize_t)))?;
    for (i, v) in items.iter().enumerate() {
        ffi::PyTuple_SET_ITEM(t.0, i as Py_ssize_t, new_ref(*v));
    }
    Ok(t)
}

/// The contents of the `bytes` object `p` (exactly `bytes`, checked by the caller).
#[inline(always)]
pub unsafe fn bytes_data<'a>(p: P) -> &'a [u8] {
    std::slice::from_raw_parts(ffi::PyBytes_AS_STRING(p) as *const u8, ffi::Py_SIZE(p) as usize)
}
