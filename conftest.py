"""Root pytest configuration: the kit's plugin (pulsar_ack_conformance/plugin.py: its plugin
modules, options, markers), which an installed kit registers through its pytest11 entry point."""

pytest_plugins = ["pulsar_ack_conformance.plugin"]
