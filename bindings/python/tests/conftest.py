import os
import shutil

import pytest


@pytest.fixture(autouse=True)
def state_dir(tmp_path, monkeypatch):
    """A private state directory (mode 700, as idforge requires) for every test: generators are
    host-wide unless told otherwise, and no test may touch the user's own state files (nor
    share one test's files, with their policies, with another). The module functions'
    generators open once per process, in the directory of the test that first calls them."""
    d = tmp_path / "state"
    d.mkdir(mode=0o700)
    monkeypatch.setenv("IDFORGE_STATE_DIR", str(d))
    monkeypatch.delenv("IDFORGE_STATE", raising=False)
    monkeypatch.delenv("IDFORGE_SHARED", raising=False)
    return d


@pytest.fixture(scope="session")
def cli():
    """The idforge command line: $IDFORGE_CLI (scripts/python-test builds it), else on PATH."""
    path = os.environ.get("IDFORGE_CLI") or shutil.which("idforge")
    if not path:
        pytest.fail("the idforge command line is needed: set IDFORGE_CLI (scripts/python-test builds it)")
    return path


def _user_state_files():
    """The files in the user's own default state directory (the home directory from the password
    database, as idforge reads it)."""
    import pwd

    d = os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".local", "state", "idforge")
    try:
        return set(os.listdir(d))
    except FileNotFoundError:
        return set()


@pytest.fixture(scope="session", autouse=True)
def _user_state_untouched():
    """Fails the run if any test made a state file in the user's own state directory."""
    before = _user_state_files()
    yield
    made = _user_state_files() - before
    assert not made, f"tests made state files in the user's own state directory: {sorted(made)}"
