"""The request loop of a driver written in Python: one JSON request per line on stdin, one reply
per line on stdout (drivers/PROTOCOL.md).

`handle` turns one request into one reply and never raises: whatever the driver's code raises
becomes an `error` reply naming the exception. `main` runs the loop for a driver factory; its
`--die-after N` option makes the driver die on its N-th op (by a signal, an exit, or by never
answering), which is how the suite's handling of a crashed client is tested.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import Protocol

from drivers import wire
from fixtures.credentials import HIDDEN


class Driver(Protocol):
    def hello(self, request: dict) -> dict: ...

    def reset(self, request: dict) -> dict: ...

    def perform(self, request: dict) -> dict: ...

    def close(self) -> None: ...


def handle(driver: Driver, request: dict) -> dict:
    """The reply to `request`, its `id` echoed."""
    kind = request.get("type")
    try:
        if kind == "op":
            reply = driver.perform(request)
        elif kind == "reset":
            reply = driver.reset(request)
        elif kind == "hello":
            if request.get("protocol") != wire.PROTOCOL:
                reply = wire.error("ProtocolVersion", f"this driver speaks protocol {wire.PROTOCOL}, "
                                                      f"asked for {request.get('protocol')!r}")
            else:
                reply = {**driver.hello(request), "protocol": wire.PROTOCOL}
        elif kind == "close":
            driver.close()
            reply = wire.ok()
        else:
            reply = wire.error("UnknownRequest", f"unknown request type {kind!r} (hello, reset, op, close)")
    except Exception as error:  # errors are data: the suite decides what a driver's failure means
        reply = wire.error(type(error).__name__, str(error))
    token = getattr(getattr(driver, "credentials", None), "token", None) or (request.get("auth") or {}).get("token")
    if token:  # no reply shows the token (PROTOCOL.md), even where it echoes what it was given
        reply = json.loads(json.dumps(reply).replace(json.dumps(token)[1:-1], HIDDEN))
    return {"id": request.get("id"), **reply}


def serve(driver: Driver, *, die_after: int | None = None, die_by: str = "segv", die_once: str | None = None) -> None:
    # Replies go to the real stdout alone: whatever else writes to stdout (a native library's log)
    # goes to stderr, where the suite keeps its tail.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    ops = 0
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            if not isinstance(request, dict):
                raise ValueError("not a JSON object")
        except ValueError as error:
            out.write(json.dumps({"id": None, **wire.error("BadRequest", f"{error}: {line[:200]!r}")}) + "\n")
            out.flush()
            continue
        if request.get("type") == "op":
            ops += 1
            if die_after is not None and ops >= die_after and _first_death(die_once):
                _die(die_by, ops)
        reply = handle(driver, request)
        out.write(json.dumps(reply, separators=(",", ":")) + "\n")
        out.flush()
        if request.get("type") == "close":
            return


def _first_death(marker: str | None) -> bool:
    """Whether to die now: always without a marker file, else only if no driver has made it yet."""
    if marker is None:
        return True
    try:
        with open(marker, "x"):
            return True
    except FileExistsError:
        return False


def _die(how: str, ops: int) -> None:
    print(f"driver: dying by {how} on op {ops} (--die-after)", file=sys.stderr, flush=True)
    if how == "exit":
        os._exit(3)
    if how == "hang":
        while True:
            time.sleep(60)
    os.kill(os.getpid(), signal.SIGKILL if how == "kill" else signal.SIGSEGV)


def main(make_driver: Callable[[argparse.Namespace], Driver], description: str,
         add_arguments: Callable[[argparse.ArgumentParser], None] | None = None) -> None:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--die-after", type=int, default=None, metavar="N",
                        help="die on the N-th op request, before replying (to test the suite's crash handling)")
    parser.add_argument("--die-by", choices=("segv", "kill", "exit", "hang"), default="segv",
                        help="how --die-after dies: SIGSEGV, SIGKILL, exit code 3, or never replying")
    parser.add_argument("--die-once", default=None, metavar="FILE",
                        help="with --die-after, die only if FILE does not exist yet (and create it): "
                             "one crash in a whole run")
    if add_arguments is not None:
        add_arguments(parser)
    args = parser.parse_args()
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    serve(make_driver(args), die_after=args.die_after, die_by=args.die_by, die_once=args.die_once)
    # Every reply is out: leave without running the native client's static destructors, which in
    # an older C++ client (pulsar-client 3.5.0) abort now and then once a client was closed
    # (SIGABRT at exit, about 1 exit in 50): how a process ends after its last reply tells nothing
    # about acknowledgements, and a driver's death is what the suite reports as a client crash.
    sys.stderr.flush()
    os._exit(0)
