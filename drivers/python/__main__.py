"""`python -m drivers.python`: the Python client as a driver process (drivers/PROTOCOL.md)."""

from drivers.serve import main


def _driver(args):
    from drivers.python.driver import PythonDriver

    return PythonDriver()


if __name__ == "__main__":
    main(_driver, "the Python client (pulsar-client) as a conformance driver")
