"""Resolve and cache the broker's jars from Maven Central."""

from __future__ import annotations

import shutil
import subprocess
from importlib import resources
from pathlib import Path

from oncelog.errors import BrokerError

KAFKA_VERSION = "4.1.1"
_STAMP = ".complete"


def jar_dir(cache_dir: Path) -> Path:
    """Where the jars of the pinned Kafka version live."""
    return cache_dir / f"kafka-{KAFKA_VERSION}" / "libs"


def log4j_config(cache_dir: Path) -> Path:
    """The broker's log4j2 configuration, copied next to the jars."""
    return cache_dir / f"kafka-{KAFKA_VERSION}" / "log4j2.properties"


def ensure_jars(cache_dir: Path) -> Path:
    """Return the jar folder, fetching it with Maven only when it is not cached yet.

    A stamp file is written last, so an interrupted download is redone rather than
    trusted; a cached copy needs no network at all.
    """
    libs = jar_dir(cache_dir)
    if (libs / _STAMP).exists():
        return libs
    mvn = shutil.which("mvn")
    if mvn is None:
        raise BrokerError(
            "the local broker's jars are not cached and `mvn` is missing: "
            "install Maven (`apt-get install maven`) or set ONCELOG_BOOTSTRAP_SERVERS"
        )
    work = libs.parent
    work.mkdir(parents=True, exist_ok=True)
    pkg = resources.files("oncelog.broker")
    (work / "pom.xml").write_bytes(pkg.joinpath("pom.xml").read_bytes())
    log4j_config(cache_dir).write_bytes(pkg.joinpath("log4j2.properties").read_bytes())
    tmp = work / "libs.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    cmd = [
        mvn,
        "-q",
        "-B",
        "-f",
        str(work / "pom.xml"),
        "dependency:copy-dependencies",
        f"-DoutputDirectory={tmp}",
        "-DincludeScope=runtime",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr)[-2000:]
        raise BrokerError(f"Maven could not resolve Kafka {KAFKA_VERSION}:\n{tail}")
    shutil.rmtree(libs, ignore_errors=True)
    tmp.rename(libs)
    (libs / _STAMP).write_text(KAFKA_VERSION)
    return libs
