//! An Avro writer of the package's models, driven by a program built from the `.avsc` file.
//!
//! `oncelog.schemas.native_writer` turns a parsed schema into a program (a tree of tuples:
//! each record lists its fields in the schema's order with where the model keeps each),
//! and [`AvroWriter`] compiles it once and writes a model's schemaless body after a fixed
//! prefix (the single-object header). The bytes are the generated Python writers' and
//! fastavro's; a value of the wrong type raises as they do (TypeError, KeyError,
//! OverflowError, AttributeError), and nothing is written.

use crate::objects::{Owned, P};
use crate::program::{Op, Program};
use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple, PyType};

/// Where a record's field is read from its model.
enum Access {
    /// Item `i` of a tuple of the record's size (a NamedTuple whose fields are the schema's).
    Item(usize),
    /// An attribute.
    Attribute(Py<PyAny>),
    /// A function of the model (a field it derives).
    Derived(Py<PyAny>),
}

enum Node {
    Null,
    Boolean,
    Long,
    Text,
    Bytes,
    /// Member (or symbol) -> index.
    Enum(Py<PyDict>),
    /// `["null", X]`.
    Optional(Box<Node>),
    /// A union of records, the branch by the model's exact class.
    Branches(Vec<(Py<PyAny>, Node)>),
    Array(Box<Node>),
    Record {
        size: Option<usize>,
        fields: Vec<(Access, Node)>,
    },
}

/// A Python exception to raise (set when the error is made, raised by the method).
struct Raised;

type Written = Result<(), Raised>;

unsafe fn raise<T>(py: Python<'_>, err: PyErr) -> Result<T, Raised> {
    err.restore(py);
    Err(Raised)
}

#[inline(always)]
fn varint(out: &mut Vec<u8>, n: i64) {
    let mut z = ((n << 1) ^ (n >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

#[inline(always)]
fn sized(out: &mut Vec<u8>, data: &[u8]) {
    varint(out, data.len() as i64);
    out.extend_from_slice(data);
}

unsafe fn write(py: Python<'_>, node: &Node, v: P, out: &mut Vec<u8>) -> Written {
    match node {
        Node::Null => {}
        Node::Boolean => match ffi::PyObject_IsTrue(v) {
            -1 => return Err(Raised),
            t => out.push(t as u8),
        },
        Node::Long => {
            let n = ffi::PyLong_AsLongLong(v);
            if n == -1 && !ffi::PyErr_Occurred().is_null() {
                if ffi::PyErr_ExceptionMatches(ffi::PyExc_OverflowError) != 0 {
                    ffi::PyErr_Clear();
                    return raise(
                        py,
                        PyOverflowError::new_err("an int that does not fit an Avro long"),
                    );
                }
                return Err(Raised);
            }
            varint(out, n);
        }
        Node::Text => {
            if ffi::PyUnicode_Check(v) == 0 {
                return raise(py, PyTypeError::new_err("a string field holds no str"));
            }
            let mut size: ffi::Py_ssize_t = 0;
            let data = ffi::PyUnicode_AsUTF8AndSize(v, &mut size);
            if data.is_null() {
                return Err(Raised); // a lone surrogate: UnicodeEncodeError, as str.encode()
            }
            sized(out, std::slice::from_raw_parts(data as *const u8, size as usize));
        }
        Node::Bytes => {
            if ffi::PyBytes_Check(v) != 0 {
                let data = ffi::PyBytes_AS_STRING(v) as *const u8;
                sized(out, std::slice::from_raw_parts(data, ffi::Py_SIZE(v) as usize));
            } else {
                let buffer = match pyo3::buffer::PyBuffer::<u8>::get(
                    Bound::from_borrowed_ptr(py, v).as_any(),
                ) {
                    Ok(buffer) => buffer,
                    Err(err) => return raise(py, err),
                };
                match buffer.to_vec(py) {
                    Ok(data) => sized(out, &data),
                    Err(err) => return raise(py, err),
                }
            }
        }
        Node::Enum(table) => {
            let index = ffi::PyDict_GetItemWithError(table.as_ptr(), v);
            if index.is_null() {
                if ffi::PyErr_Occurred().is_null() {
                    ffi::PyErr_SetObject(ffi::PyExc_KeyError, v);
                }
                return Err(Raised);
            }
            varint(out, ffi::PyLong_AsLongLong(index));
        }
        Node::Optional(inner) => {
            if v == ffi::Py_None() {
                out.push(0);
            } else {
                out.push(2);
                write(py, inner, v, out)?;
            }
        }
        Node::Branches(branches) => {
            let tp = ffi::Py_TYPE(v) as P;
            match branches.iter().position(|(cls, _)| cls.as_ptr() == tp) {
                Some(i) => {
                    varint(out, i as i64);
                    write(py, &branches[i].1, v, out)?;
                }
                None => {
                    ffi::PyErr_SetObject(ffi::PyExc_KeyError, tp);
                    return Err(Raised);
                }
            }
        }
        Node::Array(item) => write_array(py, item, v, out)?,
        Node::Record { size, fields } => write_record(py, *size, fields, v, out)?,
    }
    Ok(())
}

/// One block of every item, then the ending 0 (empty: the 0 alone), as fastavro writes.
unsafe fn write_array(py: Python<'_>, item: &Node, v: P, out: &mut Vec<u8>) -> Written {
    match ffi::PyObject_IsTrue(v) {
        -1 => return Err(Raised),
        0 => {
            out.push(0);
            return Ok(());
        }
        _ => {}
    }
    // The models hold tuples; anything else iterable is taken as one.
    let items =
        if ffi::PyTuple_Check(v) != 0 { ffi::Py_NewRef(v) } else { ffi::PySequence_Tuple(v) };
    if items.is_null() {
        return Err(Raised);
    }
    let items = Owned(items);
    let n = ffi::PyTuple_GET_SIZE(items.0);
    varint(out, n as i64);
    for i in 0..n {
        write(py, item, ffi::PyTuple_GET_ITEM(items.0, i), out)?;
    }
    out.push(0);
    Ok(())
}

unsafe fn write_record(
    py: Python<'_>,
    size: Option<usize>,
    fields: &[(Access, Node)],
    v: P,
    out: &mut Vec<u8>,
) -> Written {
    if let Some(size) = size {
        // Unpacked as a tuple of the schema's fields, as the Python writer unpacks it.
        if ffi::PyTuple_Check(v) == 0 || ffi::PyTuple_GET_SIZE(v) as usize != size {
            return raise(py, PyTypeError::new_err(format!("a record of {size} fields expected")));
        }
    }
    for (access, node) in fields {
        match access {
            Access::Item(i) => {
                write(py, node, ffi::PyTuple_GET_ITEM(v, *i as ffi::Py_ssize_t), out)?
            }
            Access::Attribute(name) => {
                let value = ffi::PyObject_GetAttr(v, name.as_ptr());
                if value.is_null() {
                    return Err(Raised);
                }
                let value = Owned(value);
                write(py, node, value.0, out)?;
            }
            Access::Derived(function) => {
                let value = ffi::PyObject_CallOneArg(function.as_ptr(), v);
                if value.is_null() {
                    return Err(Raised);
                }
                let value = Owned(value);
                write(py, node, value.0, out)?;
            }
        }
    }
    Ok(())
}

// --- the program, compiled once -----------------------------------------------------

const WRITER: Program = Program("writer");

fn compile(node: &Bound<'_, PyAny>) -> PyResult<Node> {
    let op = Op::of(node)?;
    Ok(match op.name.as_str() {
        "null" => Node::Null,
        "boolean" => Node::Boolean,
        "long" | "int" => Node::Long,
        "string" => Node::Text,
        "bytes" => Node::Bytes,
        "enum" => Node::Enum(op.arg(1)?.downcast::<PyDict>()?.clone().unbind()),
        "optional" => Node::Optional(Box::new(compile(&op.arg(1)?)?)),
        "branches" => {
            let mut branches = Vec::new();
            for branch in op.arg(1)?.try_iter()? {
                let branch = branch?;
                let branch = branch.downcast::<PyTuple>()?;
                let cls = branch.get_item(0)?;
                if !cls.is_instance_of::<PyType>() {
                    return Err(WRITER.bad("a branch's class is not a type"));
                }
                branches.push((cls.unbind(), compile(&branch.get_item(1)?)?));
            }
            if branches.len() > 63 {
                return Err(WRITER.bad("over 63 branches"));
            }
            Node::Branches(branches)
        }
        "array" => Node::Array(Box::new(compile(&op.arg(1)?)?)),
        "record" => compile_record(&op.arg(1)?, &op.arg(2)?)?,
        other => return Err(WRITER.unknown(other)),
    })
}

/// `("record", size, fields)`: `size` None (fields read by attribute or function) or the
/// tuple's length; each field `(access, node)`, `access` an item index, an attribute name
/// or a function of the model.
fn compile_record(size: &Bound<'_, PyAny>, fields: &Bound<'_, PyAny>) -> PyResult<Node> {
    let size: Option<usize> = size.extract()?;
    let mut compiled = Vec::new();
    for field in fields.try_iter()? {
        let field = field?;
        let field = field.downcast::<PyTuple>()?;
        let access = field.get_item(0)?;
        let access = if let Ok(i) = access.extract::<usize>() {
            if size.is_none_or(|size| i >= size) {
                return Err(WRITER.bad(format!("item {i} of a record of {size:?}")));
            }
            Access::Item(i)
        } else if access.is_instance_of::<pyo3::types::PyString>() {
            Access::Attribute(access.unbind())
        } else if access.is_callable() {
            Access::Derived(access.unbind())
        } else {
            return Err(WRITER.bad("a field's access is no index, name or function"));
        };
        compiled.push((access, compile(&field.get_item(1)?)?));
    }
    Ok(Node::Record { size, fields: compiled })
}

/// A writer of one record type: `write(model)` is `prefix` and the model's body.
#[pyclass(frozen, module = "oncelog._native")]
pub struct AvroWriter {
    root: Node,
    prefix: Vec<u8>,
}

#[pymethods]
impl AvroWriter {
    #[new]
    fn new(program: &Bound<'_, PyAny>, prefix: &[u8]) -> PyResult<Self> {
        Ok(AvroWriter { root: compile(program)?, prefix: prefix.to_vec() })
    }

    /// `prefix` and the schemaless Avro body of `model`.
    fn write<'py>(
        &self,
        py: Python<'py>,
        model: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let mut out = Vec::with_capacity(256);
        out.extend_from_slice(&self.prefix);
        match unsafe { write(py, &self.root, model.as_ptr(), &mut out) } {
            Ok(()) => Ok(PyBytes::new(py, &out)),
            Err(Raised) => {
                Err(PyErr::take(py).unwrap_or_else(|| PyValueError::new_err("not written")))
            }
        }
    }
}
