"""Group a callgrind profile's self cost by what the code does, per record.

    python bench/rust_core_prototype/categorize.py callgrind.out.N RECORDS

The groups are regular expressions over ``callgrind_annotate``'s ``file:function`` names,
first match wins: rough, but enough to tell object churn from logic.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict

RULES = [
    ("sha256", r"sha2|sha256|SHA256|sha512_block|Hacl|hashlib|EVP_|openssl|libcrypto"),
    ("pyo3 call glue", r"trampoline|extract_argument|__pyfunction_|pyo3::"),
    (
        "GC (collections)",
        r"gcmodule\.c:(gc_collect|visit|move_|update_refs|subtract_refs|deduce|handle|gc_)"
        r"|traverse",
    ),
    ("dealloc/free", r"dealloc|_Py_Dealloc|_PyObject_Free|free|UnTrack|clear_slots"),
    (
        "alloc/construct",
        r"Alloc|_PyObject_Malloc|PyObject_Malloc|malloc|PyUnicode_New|PyTuple_New|PyLong_From"
        r"|PyBytes_FromStringAndSize|_PyObject_GC_Link|_Py_NewReference|memset|_PyObject_Init"
        r"|PyUnicode_DecodeUTF8|ascii_decode|unicode_decode_utf8|PyUnicode_Substring|_PyLong_New",
    ),
    ("rust logic (lib.rs)", r"_oncelog_proto|rust_core_prototype|/rustc/"),
    ("mypyc compiled code", r"__native__|CPy"),
    ("dict/str hash & compare", r"dict|siphash|pyhash|unicode_compare|memcmp|unicode_eq"),
]


def main() -> None:
    path, records = sys.argv[1], int(sys.argv[2])
    out = subprocess.run(
        ["callgrind_annotate", "--threshold=100", "--auto=no", path],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    total = 0
    groups: dict[str, int] = defaultdict(int)
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+) \([\s\d.]+%\)\s+(.*)", line)
        if not m:
            continue
        cost, name = int(m.group(1).replace(",", "")), m.group(2)
        if "PROGRAM TOTALS" in name:
            total = cost
            continue
        group = next((g for g, pattern in RULES if re.search(pattern, name)), "interpreter & rest")
        groups[group] += cost
    print(f"total {total / records:,.0f}/record")
    for group, cost in sorted(groups.items(), key=lambda kv: -kv[1]):
        print(f"  {group:26s} {cost / records:8,.0f}/record  ({100 * cost / total:.0f}%)")


if __name__ == "__main__":
    main()
