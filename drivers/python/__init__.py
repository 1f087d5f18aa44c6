"""The Python client (pulsar-client, the C++ client underneath) as a driver: `python -m drivers.python`."""
