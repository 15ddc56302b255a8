"""Avro body writers generated from a parsed ``.avsc`` schema.

fastavro's ``schemaless_writer`` spends most of its time per record here on
per-call setup and the dict form of the model (``convert``; docs/performance.md).
Every client call writes a ``Request``, and the
projector writes the same :class:`ExecutionState` up to three times per request:
inside the ``Decision``, inside the ``ExecutionSnapshot`` and as the DuckDB
state blob. :func:`compile_writer` turns a schema into the source of one
function per record that writes the model's fields straight from the model (by
field name; a field the model derives is read from its property), and since a
record's body is the concatenation of its fields' bodies, ``nested`` splices a
state body written once (:class:`StateBodies`) into all three.

The package's own writers (:data:`WRITERS`) are that source written out as
:mod:`oncelog.schemas.record_writers` by :func:`module_source`
(``python -m oncelog.schemas.record_writer``), checked in and compiled by mypyc;
:func:`compile_writer` executes the same source for any other schema. The
primitives the generated code calls are in :mod:`oncelog.schemas.avro_write`.
Encoded longs and strings are memoized by value (:mod:`oncelog.schemas.byte_budget`),
and a retry memory that grew by one entry is written as the previous version's items
plus the new one (``avro_write.record_array``).
``tests/schemas/test_record_writer.py`` and ``test_request_reader.py`` check the
bytes against fastavro's.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Final, NamedTuple

from oncelog.schemas import avro_write, decision_derived, models, previous
from oncelog.schemas.avro_write import StateBodies, write_long
from oncelog.schemas.emitter import Emitter
from oncelog.schemas.inline_reader import UnsupportedError
from oncelog.schemas.layout import (
    CURRENT,
    DECISION,
    REQUEST,
    SCHEMA_DIR,
    SNAPSHOT,
    STATE,
    STATE_SCHEMA,
    model_fields,
    model_of,
    named_types,
)
from oncelog.schemas.models import ExecutionState

__all__ = ["StateBodies", "compile_writer", "module_source", "state_body", "write_long"]

# The primitives the generated code calls, by the names it calls them.
_PRIMITIVES: Final = [
    "NULL",
    "SOME",
    "TRUE",
    "FALSE",
    "text",
    "blob",
    "array",
    "record_array",
    "pack_f",
    "pack_d",
]


class _Emitter(Emitter):
    """Generates one function per record of a schema; names what the code uses."""

    def __init__(
        self,
        named: dict[str, Any],
        nested: Mapping[str, Callable[[Any], bytes]],
        unmemoized: Collection[tuple[str, str]],
    ) -> None:
        scope: dict[str, Any] = {name: getattr(avro_write, name) for name in _PRIMITIVES}
        scope["long"] = write_long
        scope["Any"] = Any
        scope["decision_derived"] = decision_derived
        super().__init__(named, scope)
        self.nested = nested
        self.unmemoized = unmemoized
        self.writers: dict[str, str] = {}  # record name -> its function's name
        # How module_source spells each bound value, by its name.
        self.spelled: dict[str, str] = {}
        self.nested_spelled: Mapping[str, str] = {}
        self.lines_written: list[str] = []  # every function's source (module_source)

    def spell(self, stem: str, value: Any, spelling: str) -> str:
        """:meth:`bind`, remembering how the module source spells ``value``."""
        name = self.bind(stem, value)
        self.spelled[name] = spelling
        return name

    def expr(self, t: Any, v: str, where: tuple[str, str] = ("", "")) -> str:
        """An expression of the body of ``v`` (a local name), of type ``t``."""
        t = self.resolved(t)
        if isinstance(t, list):
            return self._union(t, v)
        if isinstance(t, dict):
            if "logicalType" in t:
                raise UnsupportedError(t["logicalType"])
            kind = t["type"]
            if kind == "record":
                return f"{self.record(t)}({v})"
            if kind == "enum":
                return f"{self._enum(t)}[{v}]"
            if kind == "array":
                return self._array(t["items"], v)
            t = kind
        simple = {
            "string": f"blob({v}.encode())" if where in self.unmemoized else f"text({v})",
            "bytes": f"blob({v})",
            "long": f"long({v})",
            "int": f"long({v})",
            "boolean": f"(TRUE if {v} else FALSE)",
            "null": 'b""',
            "float": f"pack_f({v})",
            "double": f"pack_d({v})",
        }
        if not isinstance(t, str) or t not in simple:
            raise UnsupportedError(repr(t))
        return simple[t]

    def _enum(self, t: Any) -> str:
        """Symbol -> index varint; keyed by value so members (``StrEnum``) hash the same."""
        model_of(t["name"])  # checked against the model by oncelog.schemas.layout
        table = {s: write_long(i) for i, s in enumerate(t["symbols"])}
        return self.spell("E_", table, repr(table))

    def _array(self, t: Any, v: str) -> str:
        """An array; of records, the items of its previous version kept (``record_array``)."""
        t = self.resolved(t)
        if isinstance(t, dict) and t["type"] == "record" and t["name"] not in self.nested:
            return f"record_array({v}, {self.record(t)})"
        item = self.fresh("item")
        return f"array({v}, (lambda {item}: {self.expr(t, item)}))"

    def _union(self, branches: list[Any], v: str) -> str:
        if len(branches) == 2 and branches[0] == "null":  # ["null", X]: the optional field
            return f"(NULL if {v} is None else SOME + {self.expr(branches[1], v)})"
        records = [self.named[b] if isinstance(b, str) and b in self.named else b for b in branches]
        if not all(isinstance(r, dict) and r["type"] == "record" for r in records):
            raise UnsupportedError(f"union {branches}")
        # A union of records (a request's body): the branch index, then the record.
        named = {
            model_of(r["name"]): (write_long(i), self.record(r)) for i, r in enumerate(records)
        }
        table = {cls: _prefixed(i, self.scope[f]) for cls, (i, f) in named.items()}
        spelling = ", ".join(
            f"models.{cls.__name__}: prefixed({i!r}, {f})" for cls, (i, f) in named.items()
        )
        branch = self.spell("U_", table, f"{{{spelling}}}")
        return f"{branch}[type({v})]({v})"

    def record(self, t: Any) -> str:
        """The name of the function writing the record ``t`` (generated on first use)."""
        name = t["name"]
        if name in self.nested:
            return self.spell("NESTED_", self.nested.get(name), self.nested_spelled.get(name, ""))
        known = self.writers.get(name)
        if known is not None:
            return known
        cls = model_of(name)
        function = self.writers[name] = self.fresh(f"write_{cls.__name__}_")
        fields = [f["name"] for f in t["fields"]]
        local = {field: self.fresh("f") for field in fields}
        parts = [self.expr(f["type"], local[f["name"]], (name, f["name"])) for f in t["fields"]]
        lines = [f"def {function}(o: Any) -> bytes:"]
        if fields and tuple(fields) == model_fields(cls) and hasattr(cls, "_fields"):
            lines.append(f"    ({', '.join(local.values())},) = o")  # a NamedTuple in order
        else:  # by attribute: a dataclass, another order, or a field the model derives
            lines.extend(f"    {local[field]} = {_attribute(cls, field)}" for field in fields)
        body = "".join(f"{part}, " for part in parts)
        lines.append(f"    return b''.join(({body}))" if parts else "    return b''")
        self.lines.extend(lines)
        self._define(function)
        return function

    def _define(self, function: str) -> None:
        source = "\n".join(self.lines)
        self.lines_written.extend(["", "", *self.lines])
        self.lines = []
        code = compile(source, f"<oncelog.schemas.record_writer:{function}>", "exec")
        exec(code, self.scope)


_prefixed: Final = avro_write.prefixed

# The models whose derived fields are properties over the functions of a compiled module:
# the writer calls the function, not the property (an interpreted frame a field).
_DERIVED_BY: Final[Mapping[type, str]] = {models.Decision: "decision_derived"}


def _attribute(cls: type, field: str) -> str:
    """How a writer reads ``field`` of ``o``, a ``cls``."""
    module = _DERIVED_BY.get(cls)
    if module is not None and field not in model_fields(cls):
        return f"{module}.{field}(o)"
    return f"o.{field}"


def compile_writer(
    schema: Any,
    nested: Mapping[str, Callable[[Any], bytes]] | None = None,
    unmemoized: Collection[tuple[str, str]] = (),
) -> Callable[[Any], bytes]:
    """``write(model) -> bytes``: the schemaless Avro body of a model of the record ``schema``.

    ``nested`` writes the named records inside it instead (the state, from
    :class:`StateBodies`); ``unmemoized`` names ``(record, field)`` strings that
    are unique per record (a request id), whose bytes the memo would hold for
    nothing. Raises :class:`UnsupportedError` for a type it does not write.
    """
    emitter = _Emitter(named_types(schema), nested or {}, unmemoized)
    writer: Callable[[Any], bytes] = emitter.scope[emitter.record(schema)]
    return writer


state_body: Final[Callable[[ExecutionState], bytes]] = compile_writer(STATE_SCHEMA)
"""The schemaless Avro body of a state (``dev.oncelog.ExecutionState.avsc``)."""


# --- the generated module ---------------------------------------------------------

_MODULE_HEAD = (
    '"""The Avro body writers, generated from the schemas by oncelog.schemas.record_writer.\n'
    '''
Do not edit: `python -m oncelog.schemas.record_writer` rewrites it, and
tests/schemas/test_generated_writers.py fails while it differs from the generator's
output. It is a file, not an exec'd string, so that mypyc compiles it (setup.py).
"""

from collections.abc import Callable
from typing import Any

from oncelog.schemas import decision_derived, models, previous
from oncelog.schemas.avro_write import (
    FALSE,
    NULL,
    SOME,
    TRUE,
    StateBodies,
    array,
    blob,
    pack_d,
    pack_f,
    prefixed,
    record_array,
    text,
)
from oncelog.schemas.avro_write import write_long as long
'''
)


class Writer(NamedTuple):
    """One writer of the generated module: its public name, schema and options."""

    name: str
    schema: Any
    nested: Mapping[str, str] = {}  # record name -> how the module spells its writer
    unmemoized: Collection[tuple[str, str]] = ()


def _placeholder(o: Any) -> bytes:
    raise AssertionError("a nested writer of the generated module, spelt there")


def module_source(writers: Sequence[Writer], tail: Sequence[str] = ()) -> str:
    """The source of a module whose ``<name>(model)`` is :func:`compile_writer`'s writer.

    The same functions, with the values they use bound at module level after them
    (``tail`` lines last), so that mypyc compiles the module.
    """
    emitter = _Emitter({}, {}, ())
    lines = [_MODULE_HEAD]
    for writer in writers:
        emitter.named = named_types(writer.schema)
        emitter.nested = dict.fromkeys(writer.nested, _placeholder)
        emitter.nested_spelled = writer.nested
        emitter.unmemoized = writer.unmemoized
        emitter.writers = {}
        emitter.lines_written = lines
        function = emitter.record(writer.schema)
        lines.append(f"{writer.name}: Callable[[Any], bytes] = {function}")
    # Bound names are used inside functions only, so they may follow them.
    bound = [f"{name}: Any = {spelling}" for name, spelling in emitter.spelled.items()]
    return "\n".join([*lines, "", *tail, "", *bound, ""])


GENERATED: Final = SCHEMA_DIR / "record_writers.py"
"""The generated module: the package's writers (:data:`WRITERS`) as a file mypyc compiles."""

_UNIQUE_ID: Final = {(REQUEST, "request_id")}  # memoizing it would only churn the memo

WRITERS: Final = (
    Writer("state", STATE_SCHEMA),
    Writer("request", CURRENT[REQUEST], unmemoized=_UNIQUE_ID),
    Writer("previous_request", previous.REQUEST_SCHEMA, unmemoized=_UNIQUE_ID),
    Writer("snapshot", CURRENT[SNAPSHOT], {STATE: "STATE_BODIES.body"}),
    Writer("decision", CURRENT[DECISION], {STATE: "STATE_BODIES.body"}),
    Writer("previous_snapshot", previous.SNAPSHOT_SCHEMA, {STATE: "previous_state"}),
    Writer("previous_decision", previous.DECISION_SCHEMA, {STATE: "previous_state"}),
)
"""The writers of :data:`GENERATED`: a request in either layout, and a snapshot or a
decision whose state is written once (``STATE_BODIES``) and spliced in."""

WRITERS_TAIL: Final = (
    "STATE_BODIES: StateBodies = StateBodies(state)",
    '"""The bodies of recent states: a decision, its snapshot and the state blob share one."""',
    "",
    "",
    "def previous_state(o: Any) -> bytes:",
    '    """The previous layout\'s body of a state that fits it."""',
    "    return previous.state_body(STATE_BODIES.body(o))",
)


if __name__ == "__main__":
    GENERATED.write_text(module_source(WRITERS, WRITERS_TAIL), encoding="utf-8")
