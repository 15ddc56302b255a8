//! An Avro reader of the package's models, driven by a program built from the `.avsc` file.
//!
//! `oncelog.schemas.native_reader` turns a parsed schema into a program: a tree of tuples,
//! one node per schema type, a record node naming its model class and where each of the
//! model's fields comes from. [`AvroReader`] compiles that tree once and reads records by
//! walking it, building the models as their own constructors would (a NamedTuple filled in
//! place, a slotted dataclass's slots filled by offset). The schema stays the one source of
//! the layout: this module knows Avro, not oncelog's records.
//!
//! Like the generated Python readers it is an accelerator: at anything it is not sure of
//! (truncation, a negative length, a boolean byte other than 0/1, a union or enum index
//! out of range or spelt in more than one byte, an over-long varint, an `int` beyond 32
//! bits, a block-sized array, invalid UTF-8, trailing bytes) it returns None, and the codec
//! lets fastavro give its exact verdict.

use crate::objects::{self, Owned, P};
use crate::program::{Op, Program};
use pyo3::ffi::{self, PyTypeObject};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple, PyType};

/// Where a model's field comes from: a field the record read, or a default (a field an
/// older layout lacks).
enum Source {
    Field(usize),
    Default(Py<PyAny>),
}

/// How a record's model is built.
enum Build {
    /// A NamedTuple: allocated with its items and filled in place, as `_make` makes it.
    Tuple,
    /// A slotted dataclass: allocated, then each slot filled at its offset.
    Slots(Vec<isize>),
    /// Anything else: the class called with the fields in order.
    Call,
}

enum Node {
    Null,
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Text,
    Bytes,
    Fixed(usize),
    Enum(Vec<Py<PyAny>>),
    Union(Vec<Node>),
    Array(Box<Node>),
    Record { class: Py<PyAny>, fields: Vec<Node>, sources: Vec<Source>, build: Build },
}

/// The bytes of one record and the reader's place in them.
struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    #[inline(always)]
    fn byte(&mut self) -> Option<u8> {
        let b = *self.data.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    /// A zig-zag varint of at most 64 bits (as the Python readers accept it).
    #[inline(always)]
    fn long(&mut self) -> Option<i64> {
        let b = self.byte()?;
        if b < 0x80 {
            return Some(((b >> 1) as i64) ^ -((b & 1) as i64));
        }
        let mut n = (b & 0x7F) as u64;
        let mut shift = 7;
        loop {
            let b = self.byte()?;
            if shift == 63 && b > 1 {
                return None; // beyond 64 bits, or a continuation past the tenth byte
            }
            n |= ((b & 0x7F) as u64) << shift;
            if b < 0x80 {
                break;
            }
            shift += 7;
        }
        Some(((n >> 1) as i64) ^ -((n & 1) as i64))
    }

    #[inline(always)]
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.data.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }

    /// The payload of a string or bytes: a non-negative length, then that many bytes.
    #[inline(always)]
    fn sized(&mut self) -> Option<&[u8]> {
        let n = self.long()?;
        if n < 0 {
            return None;
        }
        self.take(n as usize)
    }

    /// A union or enum index: zig-zag in one byte, below `count`.
    #[inline(always)]
    fn index(&mut self, count: usize) -> Option<usize> {
        let b = self.byte()?;
        if b & 1 != 0 || (b >> 1) as usize >= count {
            return None;
        }
        Some((b >> 1) as usize)
    }
}

/// A new reference to the value of `node` at the cursor, or None (nothing left set) when
/// the reader is unsure.
unsafe fn read(node: &Node, cur: &mut Cursor) -> Option<P> {
    let p = match node {
        Node::Null => objects::new_ref(ffi::Py_None()),
        Node::Boolean => match cur.byte()? {
            0 => objects::boolean(false),
            1 => objects::boolean(true),
            _ => return None,
        },
        Node::Int => {
            let v = cur.long()?;
            if v < i32::MIN as i64 || v > i32::MAX as i64 {
                return None;
            }
            ffi::PyLong_FromLongLong(v)
        }
        Node::Long => ffi::PyLong_FromLongLong(cur.long()?),
        Node::Float => {
            let s = cur.take(4)?;
            ffi::PyFloat_FromDouble(f32::from_le_bytes(s.try_into().ok()?) as f64)
        }
        Node::Double => {
            let s = cur.take(8)?;
            ffi::PyFloat_FromDouble(f64::from_le_bytes(s.try_into().ok()?))
        }
        Node::Text => objects::text(cur.sized()?),
        Node::Bytes => objects::bytes(cur.sized()?),
        Node::Fixed(size) => objects::bytes(cur.take(*size)?),
        Node::Enum(members) => objects::new_ref(members[cur.index(members.len())?].as_ptr()),
        Node::Union(branches) => return read(&branches[cur.index(branches.len())?], cur),
        Node::Array(item) => read_array(item, cur)?,
        Node::Record { class, fields, sources, build } => {
            return read_record(class.as_ptr(), fields, sources, build, cur)
        }
    };
    if p.is_null() {
        ffi::PyErr_Clear(); // out of memory: let the codec's other path judge and fail
        return None;
    }
    Some(p)
}

/// Blocks of items, ended by an empty one, as a tuple.
unsafe fn read_array(item: &Node, cur: &mut Cursor) -> Option<P> {
    let mut items: Vec<Owned> = Vec::new();
    loop {
        let count = cur.long()?;
        if count == 0 {
            break;
        }
        // A negative count is a block with a byte size: legal, rare, left to fastavro. Every
        // item takes a byte at least (native_reader refuses other item types), which bounds
        // the count by what is left.
        if count < 0 || count as usize > cur.data.len() - cur.pos {
            return None;
        }
        for _ in 0..count {
            items.push(Owned(read(item, cur)?));
        }
    }
    let tuple = objects::untrack(ffi::PyTuple_New(items.len() as ffi::Py_ssize_t));
    if tuple.is_null() {
        return None;
    }
    for (i, item) in items.into_iter().enumerate() {
        ffi::PyTuple_SET_ITEM(tuple, i as ffi::Py_ssize_t, item.0);
        std::mem::forget(item);
    }
    Some(tuple)
}

/// The fields of one record as read so far (owned), on the stack: no allocation a record.
struct Values {
    items: [P; MAX_FIELDS],
    len: usize,
}

/// The most fields a record may have (`compile_record` refuses more).
const MAX_FIELDS: usize = 64;

impl Values {
    #[inline(always)]
    fn new(capacity: usize) -> Option<Self> {
        (capacity <= MAX_FIELDS)
            .then_some(Values { items: [std::ptr::null_mut(); MAX_FIELDS], len: 0 })
    }

    #[inline(always)]
    fn push(&mut self, p: P) {
        self.items[self.len] = p;
        self.len += 1;
    }

    #[inline(always)]
    fn get(&self, i: usize) -> P {
        self.items[i]
    }
}

impl Drop for Values {
    fn drop(&mut self) {
        for p in &self.items[..self.len] {
            unsafe { ffi::Py_DECREF(*p) }
        }
    }
}

unsafe fn read_record(
    class: P,
    fields: &[Node],
    sources: &[Source],
    build: &Build,
    cur: &mut Cursor,
) -> Option<P> {
    let mut values = Values::new(fields.len())?;
    for field in fields {
        values.push(read(field, cur)?);
    }
    // A new reference to each of the model's fields, in its order; a field the model
    // derives was read (and checked) and is dropped with `values`.
    let value_of = |source: &Source| -> P {
        match source {
            Source::Field(i) => objects::new_ref(values.get(*i)),
            Source::Default(value) => objects::new_ref(value.as_ptr()),
        }
    };
    let tp = class as *mut PyTypeObject;
    match build {
        Build::Tuple => {
            let obj = objects::allocate(tp, sources.len());
            if obj.is_null() {
                ffi::PyErr_Clear();
                return None;
            }
            for (i, source) in sources.iter().enumerate() {
                ffi::PyTuple_SET_ITEM(obj, i as ffi::Py_ssize_t, value_of(source));
            }
            Some(obj)
        }
        Build::Slots(offsets) => {
            let obj = objects::allocate(tp, 0);
            if obj.is_null() {
                ffi::PyErr_Clear();
                return None;
            }
            for (offset, source) in offsets.iter().zip(sources) {
                objects::fill_slot(obj, *offset, value_of(source));
            }
            Some(obj)
        }
        Build::Call => {
            let args: Vec<Owned> = sources.iter().map(|s| Owned(value_of(s))).collect();
            let ptrs: Vec<P> = args.iter().map(|a| a.0).collect();
            let obj =
                ffi::PyObject_Vectorcall(class, ptrs.as_ptr(), ptrs.len(), std::ptr::null_mut());
            if obj.is_null() {
                ffi::PyErr_Clear();
                return None;
            }
            Some(obj)
        }
    }
}

// --- the program, compiled once -----------------------------------------------------

const READER: Program = Program("reader");

fn compile(node: &Bound<'_, PyAny>) -> PyResult<Node> {
    let op = Op::of(node)?;
    Ok(match op.name.as_str() {
        "null" => Node::Null,
        "boolean" => Node::Boolean,
        "int" => Node::Int,
        "long" => Node::Long,
        "float" => Node::Float,
        "double" => Node::Double,
        "string" => Node::Text,
        "bytes" => Node::Bytes,
        "fixed" => Node::Fixed(op.arg(1)?.extract()?),
        "enum" => {
            Node::Enum(op.arg(1)?.try_iter()?.map(|m| Ok(m?.unbind())).collect::<PyResult<_>>()?)
        }
        "union" => {
            Node::Union(op.arg(1)?.try_iter()?.map(|b| compile(&b?)).collect::<PyResult<_>>()?)
        }
        "array" => Node::Array(Box::new(compile(&op.arg(1)?)?)),
        "record" => compile_record(&op.arg(1)?, &op.arg(2)?, &op.arg(3)?, &op.arg(4)?)?,
        other => return Err(READER.unknown(other)),
    })
}

/// `("record", how, class, fields, sources)`: `fields` the schema's, in its order;
/// `sources` the model's fields in its order, each `(name, index of a field)` or
/// `(name, None, default)`.
fn compile_record(
    how: &Bound<'_, PyAny>,
    class: &Bound<'_, PyAny>,
    fields: &Bound<'_, PyAny>,
    sources: &Bound<'_, PyAny>,
) -> PyResult<Node> {
    let fields: Vec<Node> = fields.try_iter()?.map(|f| compile(&f?)).collect::<PyResult<_>>()?;
    if fields.len() > MAX_FIELDS {
        return Err(READER.bad(format!("a record of {} fields", fields.len())));
    }
    let mut names = Vec::new();
    let mut compiled = Vec::new();
    for source in sources.try_iter()? {
        let source = source?;
        let source = source.downcast::<PyTuple>()?;
        names.push(source.get_item(0)?.extract::<String>()?);
        let index = source.get_item(1)?;
        compiled.push(if index.is_none() {
            Source::Default(source.get_item(2)?.unbind())
        } else {
            let i: usize = index.extract()?;
            if i >= fields.len() {
                return Err(READER.bad(format!("field {i} of {}", fields.len())));
            }
            Source::Field(i)
        });
    }
    if !class.is_instance_of::<PyType>() {
        return Err(READER.bad("a record's class is not a type"));
    }
    let is_tuple = class.downcast::<PyType>()?.is_subclass(&class.py().get_type::<PyTuple>())?;
    let build = match how.extract::<String>()?.as_str() {
        "tuple" => {
            // Filled in place: exactly its fields, each a source.
            let fields: Option<usize> = class.getattr("_fields").and_then(|f| f.len()).ok();
            if !is_tuple || fields != Some(compiled.len()) {
                return Err(READER.bad("a tuple record's class is not a NamedTuple of its sources"));
            }
            Build::Tuple
        }
        "slots" => {
            if is_tuple || names.is_empty() {
                return Err(READER.bad("a slotted record's class is a tuple, or has no slots"));
            }
            let mut offsets = Vec::new();
            for name in &names {
                let descr = class.getattr("__dict__")?.get_item(name)?;
                let offset = unsafe { objects::slot_offset(descr.as_ptr()) };
                offsets.push(
                    offset.ok_or_else(|| READER.bad(format!("{name} is not an object slot")))?,
                );
            }
            Build::Slots(offsets)
        }
        "call" => Build::Call,
        other => return Err(READER.bad(format!("unknown build {other:?}"))),
    };
    Ok(Node::Record { class: class.clone().unbind(), fields, sources: compiled, build })
}

/// A reader of one record type: `read(data, pos)` is the model in `data[pos:]`, which must
/// end with it, or None when fastavro must judge.
#[pyclass(frozen, module = "oncelog._native")]
pub struct AvroReader {
    root: Node,
}

#[pymethods]
impl AvroReader {
    #[new]
    fn new(program: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(AvroReader { root: compile(program)? })
    }

    /// The model in `data[pos:]`, or None: unsure, fastavro judges.
    fn read(&self, py: Python<'_>, data: &Bound<'_, PyBytes>, pos: usize) -> PyObject {
        let mut cur = Cursor { data: data.as_bytes(), pos };
        unsafe {
            match read(&self.root, &mut cur) {
                Some(p) if cur.pos == cur.data.len() => PyObject::from_owned_ptr(py, p),
                Some(p) => {
                    ffi::Py_DECREF(p); // trailing bytes
                    py.None()
                }
                None => py.None(),
            }
        }
    }
}
