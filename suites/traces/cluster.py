"""A Spark standalone cluster of one master and one worker, started from the installed pyspark's own
`spark-class` (no Spark download, no Hadoop), for the tests that submit the trace jobs to a real
cluster rather than to local mode. The worker runs the executors in JVMs of their own, each with
its Python workers: what the jobs ship to executors (the target's description, the corpus's
paths, the model) goes over the wire as it would on any cluster.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fixtures.broker import free_port

START_SECONDS = 90  # two JVMs on a loaded two-core machine


class ClusterError(RuntimeError):
    pass


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


@contextmanager
def standalone_cluster(work: Path, *, cores: int = 2, memory: str = "2g") -> Iterator[str]:
    """Start a master and a worker on free local ports, wait until the worker has registered, yield
    the master's URL (spark://127.0.0.1:PORT); stop both on the way out. A cluster that does not
    come up raises ClusterError with the tails of both logs."""
    work.mkdir(parents=True, exist_ok=True)
    port, web, worker_web = free_port(), free_port(), free_port()
    url = f"spark://127.0.0.1:{port}"
    env = {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_LOG_DIR": str(work), "SPARK_WORKER_DIR": str(work / "worker")}
    spark_class = str(spark_home() / "bin" / "spark-class")
    logs = {"master": work / "master.log", "worker": work / "worker.log"}
    commands = {
        "master": [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                   "--port", str(port), "--webui-port", str(web)],
        "worker": [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                   "--cores", str(cores), "--memory", memory, "--webui-port", str(worker_web),
                   "--work-dir", str(work / "worker"), url],
    }
    processes: list[subprocess.Popen] = []
    try:
        for name in ("master", "worker"):
            with logs[name].open("wb") as log:
                processes.append(subprocess.Popen(commands[name], env=env, stdout=log, stderr=subprocess.STDOUT,
                                                  stdin=subprocess.DEVNULL, start_new_session=True))
        _wait_for_worker(f"http://127.0.0.1:{web}/json/", processes, logs)
        yield url
    finally:
        for process in reversed(processes):
            _stop(process)


def _wait_for_worker(status_url: str, processes: list[subprocess.Popen], logs: dict[str, Path]) -> None:
    deadline = time.monotonic() + START_SECONDS
    why = "no answer yet"
    while time.monotonic() < deadline:
        dead = [name for name, p in zip(logs, processes) if p.poll() is not None]
        if dead:
            why = f"the {dead[0]} exited with status {processes[list(logs).index(dead[0])].returncode}"
            break
        try:
            with urllib.request.urlopen(status_url, timeout=2) as answer:
                if json.load(answer).get("aliveworkers", 0) >= 1:
                    return
            why = "the master answers, but no worker has registered"
        except OSError as error:
            why = f"the master's status page does not answer ({error})"
        time.sleep(0.5)
    tails = "\n".join(f"--- {name} log ({path}), last lines:\n{_tail(path)}" for name, path in logs.items())
    raise ClusterError(f"the Spark standalone cluster did not come up within {START_SECONDS} s: {why}\n{tails}")


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        pass
