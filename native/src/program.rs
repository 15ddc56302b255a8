//! What the Avro readers and writers share of the programs they compile.
//!
//! `oncelog.schemas.native_reader` and `native_writer` build a program from a parsed
//! `.avsc`: a tree of tuples, each node `(op, *args)`. [`Op`] is one node unpacked, and a
//! [`Program`] names the kind in the ValueError that refuses a malformed one.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// A kind of program (`"reader"`, `"writer"`), as its refusals name it.
#[derive(Clone, Copy)]
pub struct Program(pub &'static str);

impl Program {
    /// `not a reader program: {what}`, a ValueError.
    pub fn bad(self, what: impl std::fmt::Display) -> PyErr {
        PyValueError::new_err(format!("not a {} program: {what}", self.0))
    }

    /// The refusal of a node whose op the program does not know.
    pub fn unknown(self, op: &str) -> PyErr {
        self.bad(format!("unknown node {op:?}"))
    }
}

/// One node of a program: a tuple, its op (a string) first, then its arguments.
pub struct Op<'py> {
    pub name: String,
    node: Bound<'py, PyTuple>,
}

impl<'py> Op<'py> {
    /// The node `node` unpacked: a TypeError if it is not a tuple whose first item is a str.
    pub fn of(node: &Bound<'py, PyAny>) -> PyResult<Self> {
        let node = node.downcast::<PyTuple>()?.clone();
        let name = node.get_item(0)?.extract()?;
        Ok(Op { name, node })
    }

    /// Argument `i` of the node (its item `i`: the op is item 0).
    pub fn arg(&self, i: usize) -> PyResult<Bound<'py, PyAny>> {
        self.node.get_item(i)
    }
}
