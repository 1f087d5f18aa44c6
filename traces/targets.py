"""Which target `record` drives, as a picklable description built again inside each executor.

`model` is the reference model run as a broker (fixtures/targets/model_target.py); `pulsar` is a
real broker or cluster named by its service and admin URLs; `package.module:factory` is any
third-party target: `factory()` is called without arguments and must return an object with the
`fixtures.targets.protocol.Target` methods.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from fixtures.targets.protocol import Target


class TargetError(ValueError):
    pass


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetSpec:
    name: str
    service_url: str | None = None
    admin_url: str | None = None

    def check(self) -> None:
        if self.name == "pulsar" and not (self.service_url and self.admin_url):
            raise TargetError("--target pulsar needs --service-url and --admin-url")
        if self.name not in ("model", "pulsar") and ":" not in self.name:
            raise TargetError(f"--target {self.name!r}: expected model, pulsar or package.module:factory")

    def describe(self) -> str:
        return f"pulsar {self.service_url}" if self.name == "pulsar" else self.name

    def build(self) -> Target:
        if self.name == "model":
            from fixtures.targets.model_target import ModelTarget

            return ModelTarget()
        if self.name == "pulsar":
            from fixtures.targets.pulsar_target import PulsarTarget

            return PulsarTarget(self.service_url, self.admin_url)
        module_name, _, attribute = self.name.partition(":")
        try:
            factory = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError) as error:
            raise TargetError(f"--target {self.name}: cannot load it: {error}") from None
        target = factory()
        missing = [m for m in ("reset", "invoke", "close") if not callable(getattr(target, m, None))]
        if missing:
            raise TargetError(f"--target {self.name}: {type(target).__name__} lacks {', '.join(missing)}")
        return target
