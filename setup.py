"""Maps the repository's top-level folders (core/, app/, widgets/, resources/) to the
namespaced import names spokenbench.core, spokenbench.app, ... so nothing bare lands in
site-packages. Everything else lives in pyproject.toml."""

from setuptools import find_packages, setup

TOP_LEVEL = ("core", "app", "widgets", "resources")
packages = [f"spokenbench.{name}" for name in find_packages(include=[f"{top}*" for top in TOP_LEVEL])]
setup(
    packages=packages,
    package_dir={f"spokenbench.{top}": top for top in TOP_LEVEL},
    package_data={"spokenbench.resources": ["**/*"]},
    include_package_data=True,
)
