"""The HTTP API reference, generated from the OpenAPI schema of ``oncelog serve``'s app."""

from __future__ import annotations

from typing import Any

import duckdb
from prometheus_client import CollectorRegistry

from docsgen.text import md_cell
from oncelog.query.http import create_app

INTRO = """\
# HTTP API

`oncelog serve` answers these routes on `ONCELOG_HTTP_HOST:ONCELOG_HTTP_PORT`
(`127.0.0.1:8765` by default). With `ONCELOG_HTTP_TOKEN` set, every route except `/healthz`,
`/docs` and `/openapi.json` needs `Authorization: Bearer <token>` (else 401 `unauthorized`).
Errors are JSON `{"code", "message"}` with the error's HTTP status ([error codes](errors.md)).
The running server serves the same schema at `/openapi.json`. Outside the schema, `serve` also
answers `GET /metrics` (Prometheus, see [metrics](../guides/metrics.md)) and the timeline pages
under `/ui/` ([the audit](../guides/audit.md#see-a-run-in-the-browser)).

This page is generated from that schema (`make docs-reference`).
"""


def render() -> str:
    """The page: one section per path and method, then the answers' schemas."""
    spec = create_app(no_cursor, metrics=CollectorRegistry()).openapi()
    parts = [INTRO]
    for path, methods in spec["paths"].items():
        for method, op in methods.items():
            parts.append(_operation(method.upper(), path, op))
    parts.append("## Schemas\n")
    for name, schema in spec.get("components", {}).get("schemas", {}).items():
        parts.append(_schema(name, schema))
    return "\n".join(parts)


def no_cursor() -> duckdb.DuckDBPyConnection:
    """The app's cursor factory while only its schema is wanted: never called."""
    raise AssertionError("the schema is built without a store")


def _operation(method: str, path: str, op: dict[str, Any]) -> str:
    lines = [f"## `{method} {path}`", ""]
    if op.get("description") or op.get("summary"):
        lines += [_text(op.get("description") or op["summary"]), ""]
    params = op.get("parameters", [])
    if params:
        lines += ["| parameter | in | type | required | description |", "|---|---|---|---|---|"]
        for p in params:
            kind = _type(p.get("schema", {}))
            req = "yes" if p.get("required") else "no"
            desc = _text(p.get("description", ""))
            lines.append(f"| `{p['name']}` | {p['in']} | {kind} | {req} | {desc} |")
        lines.append("")
    answers = [f"{code}: {_answer(r)}" for code, r in op.get("responses", {}).items()]
    lines += ["Answers: " + "; ".join(answers) + ".", ""]
    return "\n".join(lines)


def _answer(response: dict[str, Any]) -> str:
    schema = response.get("content", {}).get("application/json", {}).get("schema", {})
    shape = _type(schema) if schema else ""
    return f"{_text(response.get('description', ''))}{' (' + shape + ')' if shape else ''}"


def _schema(name: str, schema: dict[str, Any]) -> str:
    lines = [f"### {name}", ""]
    if schema.get("description"):
        lines += [_text(schema["description"]), ""]
    props = schema.get("properties", {})
    if props:
        lines += ["| field | type | description |", "|---|---|---|"]
        for field, sub in props.items():
            lines.append(f"| `{field}` | {_type(sub)} | {_text(sub.get('description', ''))} |")
        lines.append("")
    return "\n".join(lines)


def _type(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{name.lower()})"
    if "anyOf" in schema:
        return " or ".join(_type(s) for s in schema["anyOf"])
    if schema.get("type") == "array":
        return f"list of {_type(schema.get('items', {}))}"
    if "enum" in schema:
        return " \\| ".join(f"`{v}`" for v in schema["enum"])
    return str(schema.get("type", "any"))


def _text(text: str) -> str:
    return md_cell(text)
