"""The reference model behind the driver protocol: `python -m drivers.model`, the protocol's self-test."""
