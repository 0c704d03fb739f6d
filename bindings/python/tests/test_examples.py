"""The programs in examples/ run as their docstrings say (scripts/python-test also checks them
with `mypy --strict`)."""

import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def _run(*args):
    return subprocess.run(
        [sys.executable, *map(str, args)], capture_output=True, text=True, timeout=300, env=os.environ.copy()
    )


def test_quickstart_runs_and_uses_the_private_state_directory(state_dir):
    r = _run(EXAMPLES / "quickstart.py")
    assert r.returncode == 0, r.stderr
    assert f"state file {state_dir / 'snowflake-node7.state'}" in r.stdout
    assert "take_bytes 800000 bytes = 100000 ids" in r.stdout
    assert "was made by node 378" in r.stdout


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_worker_pool_example_repeats_nothing(method, state_dir):
    r = _run(EXAMPLES / "worker_pool.py", method)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith(f"{method}: 80000 ids from "), r.stdout
    assert r.stdout.rstrip().endswith(", 0 repeated"), r.stdout
    assert (state_dir / "snowflake-node7.state").exists()


def _wsgi_app():
    spec = importlib.util.spec_from_file_location("wsgi_app_example", EXAMPLES / "wsgi_app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.app


def _call(app, query):
    seen = {}

    def start_response(status, headers):
        seen["status"], seen["headers"] = status, dict(headers)

    body = b"".join(app({"QUERY_STRING": query}, start_response))
    return seen["status"], seen["headers"], body


def test_wsgi_example_answers_increasing_ids_and_refuses_bad_counts():
    app = _wsgi_app()
    status, headers, body = _call(app, "n=5")
    assert status == "200 OK" and headers["X-Worker-Pid"] == str(os.getpid())
    ids = [int(v) for v in body.split()]
    assert len(ids) == 5 and all(a < b for a, b in zip(ids, ids[1:]))
    status, _, later = _call(app, "")
    assert status == "200 OK" and int(later) > ids[-1]
    for bad in ["n=0", "n=10001", "n=x", "n=-3"]:
        status, _, body = _call(app, bad)
        assert status == "400 Bad Request" and b"from 1 to 10000" in body, bad
