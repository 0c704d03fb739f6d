"""An application module as a web or task worker imports it: the package README's module-level
generator, made when the module is imported (in each worker, after it was forked or spawned)."""

import os

import idforge

g = idforge.Generator("snowflake", node=7)


def take(n):
    """`n` ids of the module's generator, one call each, with this process's id."""
    return os.getpid(), [g.next() for _ in range(n)]


def app(environ, start_response):
    """A WSGI application: 200 ids of the module's generator, one call each, after the pid."""
    ids = [g.next() for _ in range(200)]
    body = " ".join(map(str, [os.getpid()] + ids)).encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
