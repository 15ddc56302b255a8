//! `oncelog._native`: the parts of oncelog's per-record work written in Rust.
//!
//! Private: the package imports it through `oncelog.native_core`. The Avro readers and
//! writers have Python counterparts generated from the same `.avsc` files, for a build
//! without this module. `fold` is the referee's fold (`fold/`), the one judge: every rule
//! of the state machine in docs/spec.md §4.

mod avro_reader;
mod avro_writer;
mod fold;
mod objects;
mod program;

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<avro_reader::AvroReader>()?;
    m.add_class::<avro_writer::AvroWriter>()?;
    fold::register(m)?;
    Ok(())
}
