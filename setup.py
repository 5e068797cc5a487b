"""The wheel carries the declarative side: ``corpora/``, ``engines/``, ``adversarial/`` (tags and
regression cases) and ``ci/`` (example suites) are copied into ``verify/_data/`` of the build,
so a non-editable install (``pip install .``, a wheel from an index) runs every README command
from any folder. The top-level folders stay the editable source of truth; ``verify.config``
reads a project's own folder first and the packaged copy after. Everything else is in
pyproject.toml."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

DATA_FOLDERS = ("corpora", "engines", "adversarial", "ci")
NOT_SHIPPED = shutil.ignore_patterns("__pycache__", "*.pyc", "hypothesis", "wheels", "wheels-numpy", "cache")


class BuildWithData(build_py):
    def run(self):
        super().run()
        root = Path(__file__).resolve().parent
        target = Path(self.build_lib) / "verify" / "_data"
        for name in DATA_FOLDERS:
            if (root / name).is_dir():
                shutil.copytree(root / name, target / name, ignore=NOT_SHIPPED, dirs_exist_ok=True)


setup(cmdclass={"build_py": BuildWithData})
