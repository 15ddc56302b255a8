"""Regenerate ``identity.json``: run once, review the diff, commit the output.

    python tests/vectors/generate.py > tests/vectors/identity.json

A change to this file's output is a change to every identity ever minted. The rule is
identity v2: RFC 8785 (JCS) canonical JSON, ids in the v2 namespace (oncelog/identity/ids.py);
``tests/crosslang/identity.mjs`` re-derives every vector in Node.
"""

from __future__ import annotations

import json
from typing import Any

from oncelog.identity.canonical_json import canonical_json
from oncelog.identity.ids import idempotency_key, operation_id, request_hash

CASES: list[dict[str, Any]] = [
    {
        "channel_id": "run-42",
        "key_name": "charge:order-4471",
        "tool_name": "charge_customer",
        "params": {"order_id": "4471", "amount_cents": 4200},
        "dedup_fields": ["order_id"],
    },
    {
        "channel_id": "run-42",
        "key_name": "step-0",
        "tool_name": "llm",
        "params": {},
        "dedup_fields": None,
    },
    {
        "channel_id": "run-1",
        "key_name": "step-3",
        "tool_name": "search",
        "params": {"q": "naïve café", "emoji": "🦀", "cjk": "日本語"},
        "dedup_fields": None,
    },
    {
        "channel_id": "канал",
        "key_name": "ключ",
        "tool_name": "send_email",
        "params": {"to": "a@b.c", "body": 'line1\nline2\t"quoted"\\'},
        "dedup_fields": None,
    },
    {
        "channel_id": "run-9",
        "key_name": "nested",
        "tool_name": "t",
        "params": {"z": {"b": [1, {"y": None, "x": True}], "a": []}, "a": {"c": False}},
        "dedup_fields": None,
    },
    {
        "channel_id": "run-9",
        "key_name": "floats",
        "tool_name": "t",
        "params": {
            "f": [0.1, 1.0, -0.0, 1e-07, 1e16, 123456789.125, 2.5e-308, 1.7976931348623157e308]
        },
        "dedup_fields": None,
    },
    {
        "channel_id": "run-9",
        "key_name": "big-ints",
        "tool_name": "t",
        "params": {"i": [0, -1, 2**53 - 1, -(2**53 - 1), 10**15]},
        "dedup_fields": None,
    },
    {
        "channel_id": "run-9",
        "key_name": "one-as-float",
        "tool_name": "t",
        "params": {"n": 1.0, "m": [1e21, 1e-6, 1e-7, -0.0, 0.000123, 1e15]},
        "dedup_fields": None,
    },
    {
        "channel_id": "run-9",
        "key_name": "one-as-int",
        "tool_name": "t",
        "params": {"n": 1, "m": [1e21, 1e-6, 1e-7, 0, 0.000123, 1000000000000000]},
        "dedup_fields": None,
    },
    {
        "channel_id": "run-9",
        "key_name": "controls",
        "tool_name": "t",
        "params": {"s": "\x00\x01\x08\x0c\x1f\x7f\u2028/", "\r\n": "\u20ac$\u0080"},
        "dedup_fields": None,
    },
    {
        "channel_id": "run-9",
        "key_name": "volatile",
        "tool_name": "t",
        "params": {"id": 1, "ts": "2024-01-01T00:00:00Z", "trace": "abc"},
        "dedup_fields": ["id"],
    },
    {
        "channel_id": "run-9",
        "key_name": "no-dedup-fields-counted",
        "tool_name": "t",
        "params": {"id": 1},
        "dedup_fields": [],
    },
    {
        "channel_id": "r" * 256,
        "key_name": "k:" + "x" * 254,
        "tool_name": "t",
        "params": {"\u00e9": 1, "e\u0301": 2, "E": 3, "\U0001f600": 4, "\uffff": 5},
        "dedup_fields": None,
    },
]


def vector(case: dict[str, Any]) -> dict[str, Any]:
    """The identity of one case, as published."""
    rh = request_hash(case["tool_name"], case["params"], case["dedup_fields"])
    op = operation_id(case["channel_id"], case["key_name"])
    return {
        "input": case,
        "canonical_params": canonical_json(case["params"]).decode("utf-8"),
        "request_hash": rh,
        "operation_id": op,
        "idempotency_key": idempotency_key(op, rh),
    }


def main() -> None:
    """Print the vectors as JSON (big ints stay exact in the JSON text)."""
    print(json.dumps([vector(c) for c in CASES], ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
