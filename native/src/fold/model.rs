//! The models the fold reads and makes, found once at import: their types, defaults, slot
//! offsets and enum members, each checked against `oncelog.schemas.models`.
//!
//! The positions are in `layout`. The import fails, loudly, when a model's field list,
//! defaults, slots or enum members differ from them: a model changed and the fold must
//! change with it.

pub use super::layout::*;
use crate::objects::{self, P};
use pyo3::exceptions::PyRuntimeError;
use pyo3::ffi::PyTypeObject;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFrozenSet, PyString};
use std::sync::OnceLock;

// --- the model, set once at import ------------------------------------------------------

/// Every object the fold needs from the models: strong references, kept for the process.
pub struct Model {
    pub request: *mut PyTypeObject,
    pub state: *mut PyTypeObject,
    pub decision: *mut PyTypeObject,
    pub recent: *mut PyTypeObject,
    pub previous: *mut PyTypeObject,
    pub inheritance: *mut PyTypeObject,
    pub approval: *mut PyTypeObject,
    pub policy: *mut PyTypeObject,
    pub bodies: [*mut PyTypeObject; N_BODIES],
    /// Each body's slot offsets, by field index.
    pub slots: [[isize; 10]; N_BODIES],
    /// Each body class's `__name__`.
    pub body_names: [P; N_BODIES],
    pub kind: [P; N_BODIES],
    pub status: [P; 7],
    pub effect: [P; 2],
    pub outcome: [P; 25],
    /// The undecided statuses (AWAITING_APPROVAL, APPROVED, DENIED) and the grants' outcomes
    /// (claimed, reclaimed) as frozensets, where a value that is not a member is looked up
    /// (by hash and `==`).
    pub undecided: P,
    pub grants: P,
    /// `OUTCOME_OF_STATUS` as a dict of the members, where a status that is not a member is
    /// looked up (by hash and `==`).
    pub outcome_of_status: P,
    /// Each model's field defaults (NULL: the field has none).
    pub state_defaults: [P; N_STATE],
    pub decision_defaults: [P; N_DECISION],
    pub recent_defaults: [P; N_RECENT],
    pub approval_defaults: [P; N_APPROVAL],
    pub empty: P,
    pub hb: P,
    pub unsigned: P,
    pub self_approval: P,
    pub zero: P,
    pub one: P,
    /// `tokens::fingerprint`'s memo: token -> fingerprint.
    pub fp_memo: P,
}

// The pointers are strong references never released, read and written under the GIL.
unsafe impl Send for Model {}
unsafe impl Sync for Model {}

static MODEL: OnceLock<Model> = OnceLock::new();

/// The model; only called once `setup` succeeded (the fold is registered after it).
#[inline(always)]
pub fn model() -> &'static Model {
    match MODEL.get() {
        Some(m) => m,
        None => unreachable!("oncelog._native.fold called before its setup"),
    }
}

fn stale(what: String) -> PyErr {
    PyRuntimeError::new_err(format!(
        "oncelog._native's fold does not match oncelog.schemas.models ({what}): \
         the model changed, rebuild the fold with it"
    ))
}

fn keep(obj: &Bound<'_, PyAny>) -> P {
    obj.clone().into_ptr()
}

/// A NamedTuple model: its type, checked field list, and defaults by position.
fn named_tuple<const N: usize>(
    models: &Bound<'_, PyModule>,
    name: &str,
    fields: &[&str; N],
    defaulted: usize,
) -> PyResult<(*mut PyTypeObject, [P; N])> {
    let cls = models.getattr(name)?;
    let actual: Vec<String> = cls.getattr("_fields")?.extract()?;
    if actual != fields {
        return Err(stale(format!("{name}._fields is {actual:?}")));
    }
    let tuple = cls.py().get_type::<pyo3::types::PyTuple>();
    if !cls.downcast::<pyo3::types::PyType>()?.is_subclass(&tuple)? {
        return Err(stale(format!("{name} is not a NamedTuple")));
    }
    // The fields from `defaulted` on have defaults, the ones before none.
    let defaults = cls.getattr("_field_defaults")?;
    let defaults = defaults.downcast::<PyDict>()?;
    let mut out = [std::ptr::null_mut(); N];
    for (i, field) in fields.iter().enumerate() {
        match defaults.get_item(field)? {
            Some(value) if i >= defaulted => out[i] = keep(&value),
            None if i < defaulted => {}
            _ => return Err(stale(format!("{name}.{field}'s default"))),
        }
    }
    if defaults.len() != N - defaulted {
        return Err(stale(format!("{name}._field_defaults")));
    }
    Ok((keep(&cls) as *mut PyTypeObject, out))
}

/// An enum's members in definition order, checked: each value as listed, its name upper-cased.
fn members<const N: usize>(
    models: &Bound<'_, PyModule>,
    name: &str,
    values: &[&str; N],
) -> PyResult<[P; N]> {
    let cls = models.getattr(name)?;
    let all: Vec<Bound<'_, PyAny>> = cls.try_iter()?.collect::<PyResult<_>>()?;
    if all.len() != N {
        return Err(stale(format!("{name} has {} members", all.len())));
    }
    let mut out = [std::ptr::null_mut(); N];
    for (i, (member, value)) in all.iter().zip(values).enumerate() {
        let actual: String = member.getattr("value")?.extract()?;
        let member_name: String = member.getattr("name")?.extract()?;
        if actual != *value
            || member_name != value.to_uppercase()
            || !member.is_instance_of::<PyString>()
        {
            return Err(stale(format!("{name}.{member_name} = {actual:?}")));
        }
        out[i] = keep(member);
    }
    Ok(out)
}

/// Find everything in the models and check it; the import fails on any difference.
pub fn setup(py: Python<'_>) -> PyResult<()> {
    if MODEL.get().is_some() {
        return Ok(());
    }
    let models = py.import("oncelog.schemas.models")?;
    let dataclasses = py.import("dataclasses")?;
    let tokens = py.import("oncelog.identity.tokens")?;
    if tokens.getattr("TOKEN_FP_HEX")?.extract::<usize>()? != TOKEN_FP_HEX
        || !tokens.getattr("NO_TOKEN_FP")?.extract::<String>()?.is_empty()
    {
        return Err(stale("oncelog.identity.tokens' fingerprint width".into()));
    }
    let (request, _) = named_tuple(&models, "Request", &REQUEST_FIELDS, 6)?;
    let (state, state_defaults) = named_tuple(&models, "ExecutionState", &STATE_FIELDS, 16)?;
    let (decision, decision_defaults) = named_tuple(&models, "Decision", &DECISION_FIELDS, 6)?;
    let (recent, recent_defaults) = named_tuple(&models, "RecentRequest", &RECENT_FIELDS, 3)?;
    let (previous, _) = named_tuple(&models, "PreviousAttempt", &PREVIOUS_FIELDS, 6)?;
    let (inheritance, _) = named_tuple(&models, "Inheritance", &INHERITANCE_FIELDS, 4)?;
    let (approval, approval_defaults) = named_tuple(&models, "Approval", &APPROVAL_FIELDS, 3)?;
    let (policy, _) = named_tuple(&models, "ApprovalPolicy", &POLICY_FIELDS, 1)?;

    let kind = members(&models, "Kind", &KIND_VALUES)?;
    let status = members(&models, "Status", &STATUS_VALUES)?;
    let effect = members(&models, "Effect", &EFFECT_VALUES)?;
    let outcome = members(&models, "Outcome", &OUTCOME_VALUES)?;

    let body_kind = models.getattr("BODY_KIND")?;
    if body_kind.len()? != N_BODIES {
        return Err(stale("BODY_KIND's size".into()));
    }
    let mut bodies = [std::ptr::null_mut(); N_BODIES];
    let mut slots = [[0isize; 10]; N_BODIES];
    let mut body_names = [std::ptr::null_mut(); N_BODIES];
    for (b, name) in BODY_NAMES.iter().enumerate() {
        let cls = models.getattr(*name)?;
        let fields: Vec<String> = dataclasses
            .call_method1("fields", (&cls,))?
            .try_iter()?
            .map(|f| f?.getattr("name")?.extract())
            .collect::<PyResult<_>>()?;
        if fields != BODY_FIELDS[b] {
            return Err(stale(format!("{name}'s fields are {fields:?}")));
        }
        if cls.getattr("__dictoffset__")?.extract::<isize>()? != 0 {
            return Err(stale(format!("{name} is not slotted")));
        }
        let own = cls.getattr("__dict__")?;
        for (j, field) in fields.iter().enumerate() {
            let descr = own.get_item(field)?;
            slots[b][j] = unsafe { objects::slot_offset(descr.as_ptr()) }
                .ok_or_else(|| stale(format!("{name}.{field} is not a slot")))?;
        }
        if !body_kind.get_item(&cls)?.is(&unsafe { Bound::from_borrowed_ptr(py, kind[b]) }) {
            return Err(stale(format!("BODY_KIND[{name}]")));
        }
        body_names[b] = keep(&cls.getattr("__name__")?);
        bodies[b] = keep(&cls) as *mut PyTypeObject;
    }

    let set_of = |items: &[P]| -> PyResult<P> {
        let items: Vec<Bound<'_, PyAny>> =
            items.iter().map(|p| unsafe { Bound::from_borrowed_ptr(py, *p) }).collect();
        Ok(keep(PyFrozenSet::new(py, &items)?.as_any()))
    };
    let undecided =
        set_of(&[status[ST_AWAITING_APPROVAL], status[ST_APPROVED], status[ST_DENIED]])?;
    let grants = set_of(&[outcome[O_CLAIMED], outcome[O_RECLAIMED]])?;
    let outcome_of_status = PyDict::new(py);
    for (s, o) in OUTCOME_OF_STATUS.iter().enumerate() {
        unsafe {
            outcome_of_status.set_item(
                Bound::from_borrowed_ptr(py, status[s]),
                Bound::from_borrowed_ptr(py, outcome[*o]),
            )?;
        }
    }
    let text = |s: &str| keep(PyString::new(py, s).as_any());
    let int = |v: i64| -> PyResult<P> { Ok(keep(v.into_pyobject(py)?.as_any())) };
    let model = Model {
        request,
        state,
        decision,
        recent,
        previous,
        inheritance,
        approval,
        policy,
        bodies,
        slots,
        body_names,
        kind,
        status,
        effect,
        outcome,
        undecided,
        grants,
        outcome_of_status: keep(outcome_of_status.as_any()),
        state_defaults,
        decision_defaults,
        recent_defaults,
        approval_defaults,
        empty: text(""),
        hb: text("hb"),
        unsigned: text(UNSIGNED),
        self_approval: text(SELF_APPROVAL),
        zero: int(0)?,
        one: int(1)?,
        fp_memo: keep(PyDict::new(py).as_any()),
    };
    let _ = MODEL.set(model);
    Ok(())
}
