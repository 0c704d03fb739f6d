"""A WSGI application that hands out Snowflake ids, for gunicorn, uWSGI or any WSGI server:

    gunicorn -w 4 examples.wsgi_app:app        # or: gunicorn -w 4 --preload ...
    curl localhost:8000/?n=3

The generator is made at import, in each worker (or once in the master with --preload); either
way the workers draw from one host-wide sequence: no id repeats across them, and each worker's
ids increase.
"""

import os
from typing import Callable, Iterable, List, Tuple
from urllib.parse import parse_qs

import idforge

ids = idforge.Generator("snowflake", node=7)

StartResponse = Callable[[str, List[Tuple[str, str]]], object]


def app(environ: "dict[str, object]", start_response: StartResponse) -> Iterable[bytes]:
    query = parse_qs(str(environ.get("QUERY_STRING", "")))
    try:
        n = int(query.get("n", ["1"])[0])
    except ValueError:
        n = -1
    if not 1 <= n <= 10_000:
        body = b"n must be an integer from 1 to 10000\n"
        start_response("400 Bad Request", [("Content-Type", "text/plain")])
        return [body]
    lines = [str(i) for i in ids.take_ints(n)]
    body = ("\n".join(lines) + "\n").encode()
    headers = [
        ("Content-Type", "text/plain"),
        ("Content-Length", str(len(body))),
        ("X-Worker-Pid", str(os.getpid())),
    ]
    start_response("200 OK", headers)
    return [body]
