"""Package discovery for the wheel (pyproject.toml holds everything else).

setuptools' declarative `find` cannot install a top-level folder under another name, and
envs/, experiments/ and benchmarks/ install as jaxrl.envs, jaxrl.experiments and
jaxrl.benchmarks. So the packages are found here: every folder with an __init__.py under
jaxrl/ and under the three mapped folders, so that a new subpackage cannot be left out.
"""

from setuptools import find_packages, setup

MAPPED = {
    "jaxrl.envs": "envs",
    "jaxrl.experiments": "experiments",
    "jaxrl.benchmarks": "benchmarks",
}

packages = find_packages(include=["jaxrl", "jaxrl.*"])
for name, folder in MAPPED.items():
    packages += [name] + [f"{name}.{sub}" for sub in find_packages(folder)]

setup(packages=packages, package_dir=MAPPED)
