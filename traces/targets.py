"""Which target `record` drives, as a picklable description built again inside each executor.

`model` is the reference model run as a broker (fixtures/targets/model_target.py); `pulsar` is a
real broker or cluster named by its service and admin URLs, driven through the Python client's
driver; `package.module:factory` is any third-party target. All three load through the suite's
own loader (fixtures/targets/loader.py), under the same rules as `pytest --target`: a factory is
given the keyword arguments it names (`service_url`, `admin_url` among them), and one that names
a broker's needs `--service-url` and `--admin-url`.
"""

from __future__ import annotations

from dataclasses import dataclass

from fixtures.credentials import NONE, Credentials, redact_url
from fixtures.targets.protocol import Target, client_running


class TargetError(ValueError):
    pass


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetSpec:
    name: str
    service_url: str | None = None
    admin_url: str | None = None
    credentials: Credentials = NONE  # never written: describe() shows the URL without its userinfo
    send_timeout_ms: int | None = None  # a broker's clients' (drivers/PROTOCOL.md, hello); None: the client's default

    def check(self) -> None:
        from fixtures.targets.loader import needs_broker

        if self.name not in ("model", "pulsar") and ":" not in self.name:
            raise TargetError(f"--target {self.name!r}: expected model, pulsar or package.module:factory")
        if needs_broker(self.name) and not (self.service_url and self.admin_url):
            raise TargetError(f"--target {self.name} needs --service-url and --admin-url")

    def describe(self) -> str:
        if self.name == "pulsar":
            return f"pulsar {redact_url(self.service_url or '')}"
        return f"{self.name} at {redact_url(self.service_url)}" if self.service_url else self.name

    def replay_args(self) -> dict[str, object]:
        """What a reproduction passes to `fixtures.targets.replay.replay` to drive this target again,
        as the suite's loader records it: the broker's URLs without their userinfo, how the
        credentials were given (a file or a variable, never the token)."""
        from fixtures.targets.loader import _replay_args

        return _replay_args({"service_url": self.service_url, "admin_url": self.admin_url,
                             "credentials": self.credentials}, None)

    def identify(self) -> dict[str, str]:
        """What a recording on this target runs on, as the target tells it: `pulsar`, the broker's
        version (its admin API, GET /admin/v2/brokers/version) and `client`, the name and version
        the client's driver gave in its hello ("python-3.13.0"); {} for the model, which is neither."""
        if self.name == "model":
            return {}
        target = self.build()
        try:
            found = {}
            version = (getattr(target, "replay_args", None) or {}).get("pulsar_version")
            if version:
                found["pulsar"] = str(version)
            client = client_running(target)
            if client:
                found["client"] = client
            return found
        finally:
            target.close()

    def build(self) -> Target:
        from fixtures.targets.loader import TargetLoadError, TargetUnknown, load_target

        try:
            return load_target(self.name, service_url=self.service_url, admin_url=self.admin_url, seed=0,
                               credentials=self.credentials if self.service_url else None,
                               send_timeout_ms=self.send_timeout_ms)
        except (TargetLoadError, TargetUnknown) as error:  # a wrong name, a broker that does not answer
            raise TargetError(str(error)) from None
