"""Find a Java runtime new enough for the pinned Kafka broker."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from oncelog.errors import JavaNotFoundError

#: Apache Kafka 4.x brokers need Java 17 or newer.
MIN_JAVA = 17

_INSTALL_HINT = (
    f"Install a Java {MIN_JAVA}+ runtime (e.g. `apt-get install openjdk-17-jre-headless`) "
    "or point ONCELOG_JAVA_HOME at one."
)


def find_java(java_home: Path | None) -> Path:
    """Return the ``java`` executable to use, checked to be at least Java 17."""
    if java_home is not None:
        candidate = java_home / "bin" / "java"
        if not candidate.exists():
            raise JavaNotFoundError(
                f"ONCELOG_JAVA_HOME={java_home} has no bin/java. {_INSTALL_HINT}"
            )
        java = candidate
    else:
        found = shutil.which("java")
        if found is None:
            raise JavaNotFoundError(f"no `java` on PATH. {_INSTALL_HINT}")
        java = Path(found)
    major = java_major_version(java)
    if major < MIN_JAVA:
        raise JavaNotFoundError(
            f"{java} is Java {major}, but Kafka 4 needs Java {MIN_JAVA}+. {_INSTALL_HINT}"
        )
    return java


def java_major_version(java: Path) -> int:
    """Parse the major version out of ``java -version``."""
    try:
        proc = subprocess.run(
            [str(java), "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except OSError as exc:
        raise JavaNotFoundError(f"cannot run {java}: {exc}. {_INSTALL_HINT}") from exc
    return parse_java_version(proc.stderr + proc.stdout, java)


def parse_java_version(text: str, java: Path | str = "java") -> int:
    """Major version from ``java -version`` output (``1.8.0_x`` is 8, ``17.0.1`` is 17)."""
    match = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    if match is None:
        raise JavaNotFoundError(
            f"cannot read the version of {java}: {text[:200]!r}. {_INSTALL_HINT}"
        )
    major = int(match.group(1))
    if major == 1 and match.group(2) is not None:
        major = int(match.group(2))
    return major
