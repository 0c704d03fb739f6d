#!/usr/bin/env python3
"""KSUID conformance vectors from svix-ksuid (PyPI), a Python port of segmentio/ksuid.

    python3 -m venv /tmp/ksuid-venv && /tmp/ksuid-venv/bin/pip install svix-ksuid==0.7.0
    /tmp/ksuid-venv/bin/python gen_ksuid.py > ksuid.json

Deterministic (seeded). Each value is made by the reference (`Ksuid(datetime, payload)` or
`Ksuid.from_bytes`), written by it (`str`) and read back by it (`Ksuid.from_base62`), with its
timestamp (the reference's raw `Timestamp`: seconds since 1400000000), Unix seconds and payload.
Invalid texts: each is refused by `Ksuid.from_base62` (an exception) where `svix_refuses` is
true; svix-ksuid does not check the length (it reads short text as a smaller number), so the
texts of a wrong length are refused by the rule of segmentio/ksuid's `Parse` ("Valid encoded
KSUIDs are 27 characters"), recorded with `svix_refuses: false`.
"""
import json
import random
from datetime import datetime, timezone

import ksuid
from ksuid import Ksuid

EPOCH = 1400000000
rng = random.Random(20261126)
values = []


def record(k, source):
    text = str(k)
    back = Ksuid.from_base62(text)
    assert bytes(back) == bytes(k), text
    assert len(text) == 27, text
    raw = bytes(k)
    values.append({
        "text": text,
        "hex": raw.hex(),
        "timestamp": int.from_bytes(raw[:4], "big"),
        "unix_seconds": int(k.timestamp),
        "payload": k.payload.hex(),
        "source": source,
    })


record(Ksuid.from_bytes(bytes(20)), "nil")
record(Ksuid.from_bytes(b"\xff" * 20), "max")
record(Ksuid.from_bytes(bytes.fromhex("0669F7EFB5A1CD34B5F99D1154FB6853345C9735")), "segmentio/ksuid README inspect example")
record(Ksuid.from_bytes(bytes.fromhex("066A029C73FC1AA3B2446246D6E89FCD909E8FE8")), "segmentio/ksuid README generate-and-inspect example")
for i in range(200):
    raw = bytes(rng.getrandbits(8) for _ in range(20))
    record(Ksuid.from_bytes(raw), "random bytes")
for i in range(100):
    secs = rng.randrange(EPOCH, EPOCH + 2**32)
    payload = bytes(rng.getrandbits(8) for _ in range(16))
    record(Ksuid(datetime.fromtimestamp(secs, tz=timezone.utc), payload), "Ksuid(datetime, payload)")
# Small values: leading zero characters.
for n in [1, 61, 62, 63, 2**32, 2**128 - 1, 2**128]:
    record(Ksuid.from_bytes(n.to_bytes(20, "big")), f"the number {n}")

invalid = []


def refuse(text, why):
    try:
        Ksuid.from_base62(text)
        svix = False
    except Exception:
        svix = True
    if len(text) == 27:
        assert svix, text
    invalid.append({"text": text, "why": why, "svix_refuses": svix})


refuse("aWgEPTl1tmebfsQzFP4bxwgy80W", "one above the largest KSUID")
refuse("zzzzzzzzzzzzzzzzzzzzzzzzzzz", "far above the largest KSUID")
refuse("b000000000000000000000000000"[:27], "above the largest KSUID")
for c in "-_+/= .!~":
    refuse("0ujtsYcgvSTl8PAuAdqWYSMnLO" + c, f"{c!r} is not base62")
refuse("0ujtsYcgvSTl8PAuAdqWYSMnLO", "26 characters")
refuse("0ujtsYcgvSTl8PAuAdqWYSMnLOvv", "28 characters")
refuse("", "empty")

print(json.dumps({
    "source": f"svix-ksuid {ksuid.__version__ if hasattr(ksuid, '__version__') else '0.7.0'} (PyPI), gen_ksuid.py; lengths refused as segmentio/ksuid Parse does",
    "epoch": EPOCH,
    "max_text": "aWgEPTl1tmebfsQzFP4bxwgy80V",
    "valid": values,
    "invalid": invalid,
}, indent=1))
