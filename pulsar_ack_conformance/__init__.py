"""The Pulsar acknowledgement conformance kit, installed under one name.

In the repository this folder holds only what an installed kit adds: the pytest plugin (`plugin`,
which the root conftest.py loads too), the entry point pytest finds in an installed kit
(`entry`), the `pulsar-ack-conformance` command (`cli`) and the build backend that puts the
top-level packages under this name in a wheel (`build_backend`). Installed, this package also
holds `model`, `fixtures`, `suites`, `reports`, `traces`, `benchmarks` and `drivers`.
"""
