"""The archive's locations: a local directory, and a bucket on a real S3-compatible server."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from oncelog.settings import Settings
from tests.archive import s3server


@pytest.fixture(scope="session")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[s3server.S3Server]:
    """One gofakes3 server for the session (each test archives under its own prefix)."""
    with s3server.running(tmp_path_factory.mktemp("s3")) as server:
        yield server


@pytest.fixture(params=["local", "s3"])
def archived(request: pytest.FixtureRequest, settings: Settings, tmp_path: Path) -> Settings:
    """The test's settings with an archive: a directory, or a prefix of the S3 bucket."""
    if request.param == "local":
        return settings.model_copy(update={"archive_url": str(tmp_path / "archive")})
    server: s3server.S3Server = request.getfixturevalue("s3")
    return settings.model_copy(
        update={
            "archive_url": f"s3://{server.bucket}/{uuid.uuid4().hex}",
            "archive_s3_endpoint": server.endpoint,
            "archive_s3_access_key": s3server.ACCESS_KEY,
            "archive_s3_secret_key": SecretStr(s3server.SECRET_KEY),
        }
    )
