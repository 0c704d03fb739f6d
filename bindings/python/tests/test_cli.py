"""Python and `idforge gen --shared` on one state file: one sequence."""

import os
import subprocess
import time

import idforge


def test_default_state_path_is_the_cli_s(cli, state_dir):
    g = idforge.Generator("snowflake", node=3, shared=True)
    out = subprocess.run(
        [cli, "gen", "snowflake", "--node", "3", "--shared", "--state-path"],
        check=True, capture_output=True, text=True, env=os.environ,
    ).stdout.strip()
    assert str(g.state_path) == out == str(state_dir / "snowflake-node3.state")
    assert str(idforge.Generator("uuid7", shared=True).state_path) == str(state_dir / "uuid7.state")


def test_python_and_cli_draw_from_one_sequence(cli, state_dir):
    path = state_dir / "uuid7.state"
    g = idforge.Generator("uuid7", shared=True)
    mine = g.take_ints(1000)
    with open(state_dir / "cli.out", "w") as f:
        p = subprocess.Popen(
            [cli, "gen", "uuid7", "--shared", "-n", "300000", "--format", "hex"],
            stdout=f, env=os.environ,
        )
        while p.poll() is None:
            mine.extend(g.take_ints(100))
            # Leave the command a core (a busy loop here slowed it from 0.06 s to minutes on
            # a loaded 2-core machine).
            time.sleep(0.0002)
        assert p.wait() == 0
    mine.extend(g.take_ints(1000))
    theirs = [int(line, 16) for line in (state_dir / "cli.out").read_text().split()]
    assert len(theirs) == 300_000 and g.state_path == path or str(g.state_path) == str(path)
    assert all(a < b for a, b in zip(mine, mine[1:]))
    assert all(a < b for a, b in zip(theirs, theirs[1:]))
    assert not set(mine) & set(theirs)
    # Python issued before, during and after the command's run: one interleaved sequence.
    assert min(mine) < min(theirs) and max(theirs) < max(mine)
    # A value of Python's between the command's first and last id proves the interleaving.
    assert any(min(theirs) < v < max(theirs) for v in mine)
