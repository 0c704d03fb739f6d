import os
import shutil

import pytest


@pytest.fixture
def state_dir(tmp_path, monkeypatch):
    """A private state directory (mode 700, as idforge requires) for host-wide generators."""
    d = tmp_path / "state"
    d.mkdir(mode=0o700)
    monkeypatch.setenv("IDFORGE_STATE_DIR", str(d))
    monkeypatch.delenv("IDFORGE_STATE", raising=False)
    return d


@pytest.fixture(scope="session")
def cli():
    """The idforge command line: $IDFORGE_CLI (scripts/python-test builds it), else on PATH."""
    path = os.environ.get("IDFORGE_CLI") or shutil.which("idforge")
    if not path:
        pytest.fail("the idforge command line is needed: set IDFORGE_CLI (scripts/python-test builds it)")
    return path
