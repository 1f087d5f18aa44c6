"""The Java driver's class-data archive: a driver process that starts warm.

A conformance run starts a fresh driver process at every client crash its programs make
(`crash_client`), and a cold JVM takes about 0.8 s to its hello reply and 0.7 s more to its first
send (class loading and interpretation of the client, Netty and Jackson), where a warm one sends in
25 ms. A class-data archive (AppCDS: made with `-XX:ArchiveClassesAtExit`, mapped with
`-XX:SharedArchiveFile`) holds the classes a driver loaded in a short program and cuts both
(benchmarks/java_driver_start.py). The program is run on the broker the conformance run uses, on a
topic of its own deleted afterwards: a send, a batched send, a subscribe, receives, an ack, a nack
and a close, so that the producer's and the consumer's classes are in it. It is made once per
driver build and JVM binary (another JVM cannot map it; it would only lose the time back), to a
scratch name first, so that runs making it at once each leave a whole file. One that cannot be made
(no broker reachable, a JVM without class-data sharing) leaves the driver as it was: cold.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from drivers import wire
from model import ops as o
from model.spec import Spec

_MAKING_S = 60.0  # the most the program and the archive's dump may take


@dataclass(frozen=True, slots=True)
class WarmUp:
    """Where the archive's program runs: a broker the run uses, its credentials on the wire
    (`Credentials.to_wire()`), a topic name of its own, and how to delete that topic afterwards."""

    service_url: str
    auth: dict | None
    topic: str
    delete_topic: Callable[[str], None]


def archive_path(folder: Path, java: Path) -> Path:
    """The archive of the build in `folder` for this JVM binary (by its path, size and time)."""
    binary = java.resolve()
    stat = binary.stat()
    tag = hashlib.sha256(f"{binary}\0{stat.st_size}\0{stat.st_mtime_ns}".encode()).hexdigest()[:12]
    return folder / f"driver-{tag}.jsa"


def program(warm: WarmUp) -> list[dict]:
    """The requests of the archive's program, the driver's close last."""
    ops = [o.Send(keys=(None,)), o.Send(keys=(None, None), batched=True), o.Subscribe(consumer="c0"),
           o.Receive(consumer="c0", timeout_ms=2000), o.Acknowledge(consumer="c0", message=o.MessageId(entry=0)),
           o.Receive(consumer="c0", timeout_ms=2000),
           o.NegativeAcknowledge(consumer="c0", message=o.MessageId(entry=1, index=0)), o.Close(consumer="c0")]
    sends = iter(range(len(ops)))
    return [wire.hello(warm.service_url, warm.auth), wire.reset(Spec(), warm.topic, "warm-up"),
            *(wire.op_request(op, entry=next(sends) if isinstance(op, o.Send) else None) for op in ops),
            wire.close()]


def make_archive(command: tuple[str, ...], archive: Path, warm: WarmUp) -> bool:
    """Run the driver `command` (without an archive) on the program, dumping its classes into
    `archive`. True once the archive is in place."""
    making = archive.with_name(f".{archive.name}.{os.getpid()}")
    recording = (command[0], f"-XX:ArchiveClassesAtExit={making}", *command[1:])
    requests = "".join(json.dumps(request) + "\n" for request in program(warm))
    try:
        subprocess.run(recording, input=requests, capture_output=True, text=True, timeout=_MAKING_S, check=False)
        if making.exists() and making.stat().st_size > 0:
            os.replace(making, archive)
    except (OSError, subprocess.SubprocessError):
        pass
    finally:
        making.unlink(missing_ok=True)
        try:
            warm.delete_topic(warm.topic)
        except Exception:  # noqa: BLE001 - a topic left behind costs nothing; the archive is what matters
            pass
    return archive.exists()
