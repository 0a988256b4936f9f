"""Start-up (issue 38): `import jaxrl`, `jaxrl --help`, `--version` and `train --help` import
nothing heavy, and Ctrl-C at any moment ends `jaxrl` with exit 130 and one line, no traceback.

Each check runs in a fresh interpreter (a subprocess), started in this checkout's root so that
it imports this checkout's jaxrl, never an installed one."""

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import jaxrl

ROOT = pathlib.Path(jaxrl.__file__).resolve().parent.parent

# Never imported by `import jaxrl`, `jaxrl --version`, `jaxrl --help` (nor jaxrl.cli itself).
HEAVY = ("jax", "flax", "optax", "orbax", "tyro", "numpy", "brax", "mujoco", "mujoco_playground")
# Never imported by `jaxrl train --help` nor by `import jaxrl.envs`: the simulators (and the
# checkpoint library).
SIMULATORS = ("brax", "mujoco", "mujoco_playground", "orbax", "wandb")
# Nor by `jaxrl train --help` (any algorithm's): the agents' configs and the registry import no
# jax (jaxrl/agents/configs/, issue 37); tyro, which builds the parser, may be imported.
JAX = ("jax", "jaxlib", "flax", "optax")


def _python(code: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
    )


def _loaded(code: str, names: tuple[str, ...]) -> list[str]:
    """The top-level packages of `names` that sys.modules holds after running `code`."""
    probe = (
        "import contextlib, io, json, sys\n"
        f"{code}\n"
        f"print(json.dumps([n for n in {names!r} if n in sys.modules]))"
    )
    return json.loads(_python(probe).stdout.splitlines()[-1])


def test_import_jaxrl_and_its_help_and_version_import_nothing_heavy():
    code = (
        "import jaxrl\n"
        "from jaxrl import cli\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert cli.main(['--version']) == 0\n"
        "    assert cli.main(['--help']) == 0\n"
    )
    assert _loaded(code, HEAVY) == []


def test_train_help_and_the_env_registry_import_no_simulator():
    code = (
        "import jaxrl.envs\n"
        "from jaxrl import cli\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        cli.main(['train', '--help'])\n"
        "    except SystemExit as exit:\n"
        "        assert exit.code == 0\n"
    )
    assert _loaded(code, SIMULATORS) == []


def test_train_help_with_the_playground_preset_imports_no_jax():
    """--preset playground reads Playground's config of the task when a run starts; its help
    shows jaxrl's defaults and builds no env."""
    code = (
        "from jaxrl import cli\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    try:\n"
        "        cli.main(['train', '--algo', 'sac', '--env', 'playground/CartpoleBalance',\n"
        "                  '--preset', 'playground', '--help'])\n"
        "    except SystemExit as exit:\n"
        "        assert exit.code == 0\n"
        "assert 'Playground' in out.getvalue()\n"
    )
    assert _loaded(code, SIMULATORS + JAX) == []


def test_mjx_imported_through_jaxrl_skips_warp_silently_and_warp_stays_importable():
    """envs/skip_warp.py: MJX imported after jaxrl's envs loads neither Warp nor its Warp
    port, prints nothing, and builds a Playground env; Warp itself can be imported after."""
    code = (
        "import jaxrl.envs, mujoco.mjx, sys\n"
        "loaded = [n for n in ('warp', 'mujoco.mjx.third_party.mujoco_warp') if n in sys.modules]\n"
        "import mujoco.mjx.warp as mjx_warp\n"
        "env = jaxrl.envs.make('playground/CartpoleBalance')\n"
        "import warp\n"
        "print(loaded, mjx_warp.WARP_INSTALLED)\n"
    )
    assert _python(code).stdout.splitlines() == ["[] False"]
    opted_in = subprocess.run(
        [sys.executable, "-c", "import jaxrl.envs, mujoco.mjx, sys; print('warp' in sys.modules)"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "JAXRL_WARP": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert opted_in.stdout.split()[-1] == "True"


def test_train_help_imports_no_jax():
    for argv in (["train", "--help"], ["train", "--algo", "td3", "--help"]):
        code = (
            "from jaxrl import cli\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n"
            f"        cli.main({argv!r})\n"
            "    except SystemExit as exit:\n"
            "        assert exit.code == 0\n"
        )
        assert _loaded(code, JAX + SIMULATORS) == [], argv


def test_the_agent_registry_and_configs_import_no_jax():
    code = (
        "from jaxrl import agents\n"
        "for spec in agents.ALGORITHMS.values():\n"
        "    spec.config_cls(), spec.on_policy, agents.algorithm_of(spec.config_cls())\n"
        "from jaxrl.config import TrainConfig\n"
        "assert TrainConfig(algo='ppo').on_policy and not TrainConfig(algo='td3').on_policy\n"
    )
    assert _loaded(code, JAX + SIMULATORS) == []


def test_every_public_name_resolves():
    code = (
        "import jaxrl\n"
        "missing = [n for n in jaxrl.__all__ if getattr(jaxrl, n, None) is None]\n"
        "assert not missing, missing\n"
        "assert set(jaxrl.__all__) <= set(dir(jaxrl))\n"
        "assert jaxrl.make_env is jaxrl.envs.make and jaxrl.sac is jaxrl.agents.sac\n"
        "assert jaxrl.ConfigError is jaxrl.config.ConfigError\n"
        "from jaxrl import TrainConfig, SACConfig, train\n"
        "for spec in jaxrl.ALGORITHMS.values():  # every algorithm's config, by its name\n"
        "    assert getattr(jaxrl, spec.config_cls.__name__) is spec.config_cls\n"
        "assert type(jaxrl.preset('td3_pendulum')[1]) is jaxrl.TD3Config\n"
        "try:\n"
        "    jaxrl.no_such_name\n"
        "except AttributeError:\n"
        "    pass\n"
        "else:\n"
        "    raise AssertionError('jaxrl.no_such_name resolved')\n"
    )
    _python(code)
    assert set(jaxrl.__all__) <= set(dir(jaxrl))


def _best_import_seconds(module: str, tries: int = 3) -> float:
    code = (
        f"import time\nstart = time.perf_counter()\nimport {module}\n"
        "print(time.perf_counter() - start)"
    )
    return min(float(_python(code).stdout.split()[-1]) for _ in range(tries))


def test_import_jaxrl_is_not_much_slower_than_import_jax():
    # Measured on the 2-core CI machine under benchmark load (best of 3): eagerly, as before
    # issue 38, `import jaxrl` took 4.7-11 s against 1.2-1.8 s for `import jax` (it imported
    # brax, mujoco, mujoco_playground, flax and optax); lazily it takes 0.02-0.1 s, since it
    # imports not even jax. The bound leaves room for load and fails the eager import by a lot.
    jax_seconds = _best_import_seconds("jax")
    jaxrl_seconds = _best_import_seconds("jaxrl")
    assert jaxrl_seconds <= 1.5 * jax_seconds + 0.5, (jaxrl_seconds, jax_seconds)


def test_ctrl_c_during_start_up_exits_130_with_one_line(tmp_path):
    """SIGINT while `jaxrl train` is still importing jax, flax, brax, ... (3 s in; the first
    chunk compiles for longer than that): exit 130, no traceback, one line on stderr. (Ctrl-C
    during training, a checkpoint saved first: test_commands.py.)"""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "jaxrl.cli", "train", "--preset", "sac_pendulum"]
        + ["--out", str(tmp_path / "run")],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # 3 s in: past Python's own start-up and `jaxrl.cli`'s standard-library imports (before
    # main runs, no handler of jaxrl's can answer; under heavy load they took over 1.5 s once),
    # and well before the first chunk (imports and compiling take about 10 s).
    time.sleep(3.0)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, (out, err)
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert 1 <= len(lines) <= 2 and "interrupted" in lines[-1], err


def test_a_ctrl_c_that_python_swallows_is_raised_again():
    """Ctrl-C handled inside a `__del__` (or JAX's gc callback, or Python called from C++),
    where the KeyboardInterrupt is swallowed ("Exception ignored in ..."): main's watchdog
    raises it again, so the command still ends with exit 130 and one line, not at its end."""
    code = (
        "import signal, sys, time\n"
        "from jaxrl import cli\n"
        "class Swallows:\n"
        "    def __del__(self):\n"
        "        signal.raise_signal(signal.SIGINT)  # handled here, in __del__\n"
        "        sum(range(10))\n"
        "def command(argv):\n"
        "    Swallows()\n"
        "    time.sleep(20)\n"
        "    return 0\n"
        "cli.COMMANDS['train'] = (command, '')\n"
        "sys.exit(cli.main(['train']))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 130, done.stderr
    assert time.perf_counter() - start < 15, "the Ctrl-C was lost: the command ran to its end"
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines() == [
        "jaxrl train: interrupted; nothing saved since its last checkpoint, if it has one."
    ]


def test_a_caught_ctrl_c_ends_the_process_at_once_without_pythons_shutdown(tmp_path):
    """Once main has caught a Ctrl-C and the exception has unwound, the console script ends
    the process with os._exit(130): Python's shutdown (atexit hooks, then SIGINT's default
    action restored) is where a redelivered signal killed it (-2) or a native one aborted it
    (-6), about once in 24 Ctrl-Cs during start-up. Here an atexit hook that would write a file
    stands for that shutdown: it must never run."""
    marker = tmp_path / "shutdown-ran"
    code = (
        "import atexit, pathlib, sys\n"
        "from jaxrl import cli\n"
        f"atexit.register(lambda: pathlib.Path({str(marker)!r}).write_text('ran'))\n"
        "def interrupted(argv):\n"
        "    raise KeyboardInterrupt\n"
        "cli._main = interrupted\n"
        "sys.argv = ['jaxrl', 'train']\n"
        "sys.exit(cli.main())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 130, done.stderr
    assert "interrupted" in done.stderr and "Traceback" not in done.stderr
    assert not marker.exists()
