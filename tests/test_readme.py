"""README.md stays true: its functional-API example runs and learns."""

import pathlib
import re

import numpy as np

README = pathlib.Path(__file__).parents[1] / "README.md"


def test_readme_api_example_runs_and_learns():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert len(blocks) == 1
    namespace: dict = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)
    returns = np.asarray(namespace["metrics"]["eval_return"])
    assert returns.shape == (4,)  # 20,000 steps, an evaluation every 5,000
    assert returns.max() >= -250.0 and returns[0] < -700.0
    assert namespace["action"].shape == (16, 1)
    assert np.isfinite(float(namespace["final"]["eval_return"]))


def test_readme_first_commands_are_install_and_tests():
    commands = re.findall(r"```bash\n(.*?)```", README.read_text(), re.S)
    assert "pip install -e '.[dev]'" in commands[0] and "jaxrl train" in commands[0]
    assert commands[1].strip() == "python -m pytest tests"
    ci = (README.parent / ".ci" / "run").read_text()
    assert "pip install -e '.[dev]'" in ci and "python -m pytest tests" in ci
