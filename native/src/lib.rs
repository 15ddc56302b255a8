//! `oncelog._native`: the package's Rust extension module, built by `setup.py` with cargo
//! beside the mypyc core (docs/compiled-core.md). Imported through `oncelog.native_core`.

use pyo3::prelude::*;

/// The layout of what this module holds; a placeholder until the codecs arrive.
#[pyfunction]
fn layout_version() -> &'static str {
    "0"
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(layout_version, m)?)?;
    Ok(())
}
