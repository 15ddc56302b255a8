"""The models are checked against the .avsc files at import, with a clear error."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from oncelog.schemas import layout


def _request() -> Any:
    return copy.deepcopy(layout.CURRENT[layout.REQUEST])


def test_the_current_schemas_match_the_models() -> None:
    for schema in (*layout.CURRENT.values(), layout.STATE_SCHEMA):
        layout.check(schema)  # what the import ran: no error


def test_a_schema_field_the_model_lacks_is_named() -> None:
    schema = _request()
    schema["fields"].append({"name": "not_in_the_model", "type": ["null", "long"], "default": None})
    with pytest.raises(layout.LayoutError, match=r"models.Request .*missing .*'not_in_the_model'"):
        layout.check(schema)


def test_a_model_field_the_schema_lacks_is_named() -> None:
    schema = _request()
    schema["fields"] = [f for f in schema["fields"] if f["name"] != "reply_partition"]
    with pytest.raises(layout.LayoutError, match=r"not in the schema \['reply_partition'\]"):
        layout.check(schema)


def test_a_nested_record_is_checked_too() -> None:
    schema = _request()
    claim = schema["fields"][5]["type"][0]
    claim["fields"] = [f for f in claim["fields"] if f["name"] != "worker_id"]
    with pytest.raises(layout.LayoutError, match=r"models.Claim .*'worker_id'"):
        layout.check(schema)


def test_enum_symbols_must_match_in_order() -> None:
    schema = _request()
    effect = schema["fields"][5]["type"][0]["fields"][5]["type"]
    effect["symbols"] = ["external", "pure"]
    with pytest.raises(layout.LayoutError, match=r"models.Effect"):
        layout.check(schema)


def test_a_record_without_a_model_class_is_named() -> None:
    schema = _request()
    schema["fields"][5]["type"][0]["name"] = "dev.oncelog.Grab"
    with pytest.raises(layout.LayoutError, match=r"dev.oncelog.Grab .*no class models.Grab"):
        layout.check(schema)


def test_fields_the_model_derives_are_allowed() -> None:
    decision = layout.CURRENT[layout.DECISION]
    derived = layout.derived_fields(decision)
    assert derived == ("version", "holder_worker_id", "lease_deadline_ms", "cancel_requested")


def _checkpoint() -> Any:
    return copy.deepcopy(layout.CURRENT[layout.CHECKPOINT])


def test_a_checkpoint_field_the_stored_part_lacks_is_named() -> None:
    schema = _checkpoint()
    schema["fields"].append({"name": "not_in_the_part", "type": ["null", "long"], "default": None})
    with pytest.raises(layout.LayoutError, match=r"CheckpointPart .*missing \['not_in_the_part'\]"):
        layout.check_part(schema)


def test_a_stored_part_field_the_schema_lacks_is_named() -> None:
    schema = _checkpoint()
    schema["fields"] = [f for f in schema["fields"] if f["name"] != "task_path"]
    with pytest.raises(layout.LayoutError, match=r"not in the schema \['task_path'\]"):
        layout.check_part(schema)


def test_an_optional_checkpoint_field_must_be_optional_in_the_part() -> None:
    schema = _checkpoint()
    thread = next(f for f in schema["fields"] if f["name"] == "thread_id")
    thread["type"], thread["default"] = ["null", "string"], None
    with pytest.raises(layout.LayoutError, match=r"do not take None \['thread_id'\]"):
        layout.check_part(schema)
    layout.check_part(layout.CURRENT[layout.CHECKPOINT])  # what the import ran: no error
