"""Clients under test as processes: the driver protocol (drivers/PROTOCOL.md), its encoding
(drivers.wire), the request loop a Python driver runs (drivers.serve), and two drivers: the
Python client (drivers.python) and the reference model behind the protocol (drivers.model), the
protocol's self-test."""
