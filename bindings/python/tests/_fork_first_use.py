"""Run as a program: forks CHILDREN children from a process that has imported idforge but made no
id (as a pre-fork server's master), each making its first ids after the fork; prints each
child's stamps as one line of hex numbers. Usage: _fork_first_use.py WHAT CHILDREN EACH."""

import os
import sys

import idforge


def stamps(what, n):
    if what == "nanots":
        return [idforge.nanots() for _ in range(n)]
    if what == "uuid7":
        # The top 70 bits: milliseconds, version, counter, variant; the 58 random bits dropped.
        return [idforge.uuid7().int >> 58 for _ in range(n)]
    if what == "snowflake":
        g = idforge.Generator("snowflake", node=7)  # the README's example, made in the child
        return [g.next() for _ in range(n)]
    raise SystemExit(f"unknown: {what}")


def main():
    what, children, each = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    kids = []
    for _ in range(children):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                os.close(r)
                line = " ".join(format(v, "x") for v in stamps(what, each)) + "\n"
                with os.fdopen(w, "w") as f:
                    f.write(line)
            except BaseException as e:  # noqa: BLE001 - reported through the exit code
                print(f"child: {e!r}", file=sys.stderr)
                code = 1
            finally:
                os._exit(code)
        os.close(w)
        kids.append((pid, r))
    failed = False
    for pid, r in kids:
        with os.fdopen(r) as f:
            sys.stdout.write(f.read())
        _, status = os.waitpid(pid, 0)
        failed |= not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
