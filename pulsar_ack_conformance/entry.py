"""What pytest loads through the `pytest11` entry point: the kit's plugin, when the kit is
installed from a wheel (its packages are then inside this one). An editable install of the
repository (`./dev setup`) has the entry point too, but there the root conftest.py loads the
plugin, and a pytest run outside the repository (the project's own tests of the reports plugin
run such, some with a `fixtures` package of their own) gets nothing from it. Nothing is imported
to tell the two apart, so that neither can fail here."""

from pathlib import Path

INSTALLED = (Path(__file__).parent / "fixtures").is_dir()

pytest_plugins = ["pulsar_ack_conformance.plugin"] if INSTALLED else []
