"""README.md and the docs/ pages stay true: their functional-API examples run and learn, their
commands parse, the run-folder commands work as written, the README stays a front page, and
every relative link leads to a file that exists."""

import dataclasses
import json
import pathlib
import re
import shlex

import numpy as np
import pytest
import tyro

import jaxrl
from jaxrl import checkpoint, cli, plot
from jaxrl.config import parsing, resolve
from jaxrl.experiments import scale, sweep
from jaxrl.run import runs
from tests import tiny

ROOT = pathlib.Path(__file__).parents[1]
README = ROOT / "README.md"
# The README first, then every docs page: the pages whose code blocks the tests read.
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
# The docs pages the README links, each for what it covers.
README_LINKS = (
    "docs/CLI.md",  # the command line
    "docs/FLAGS.md",  # every jaxrl train flag (generated)
    "docs/API.md",  # the Python API
    "docs/RUNS.md",  # resume, faults, checkpoints
    "docs/SCALING.md",  # seeds, grids, devices, hosts
    "docs/SCALE.md",  # jaxrl scale: scaling laws in the UTD ratio
    "docs/BENCHMARKS.md",
    "docs/BRAX.md",  # the Brax door: jaxrl.brax.ppo.train
    "docs/EXPORT.md",  # jaxrl export: policies to ONNX
    "docs/PARITY.md",  # parity with Brax
    "docs/ALGORITHMS.md",
    "docs/DESIGN.md",
    "docs/TESTING.md",
)


def _blocks(language: str) -> dict[str, list[str]]:
    """Each page's fenced blocks of one language, by the page's path from the repository root."""
    return {
        str(page.relative_to(ROOT)): re.findall(rf"```{language}\n(.*?)```", page.read_text(), re.S)
        for page in PAGES
    }


def _python_blocks(page: str = "docs/API.md") -> list[str]:
    found = _blocks("python")
    # Every Python example of the README and the docs is one the tests below run.
    counts = {name: len(blocks) for name, blocks in found.items() if blocks}
    # SCALE.md's: tests/experiments/test_scale.py; OFFLINE.md's:
    # test_readme_run_folder_commands_work_as_written
    assert counts == {
        "README.md": 1, "docs/API.md": 4, "docs/BRAX.md": 6, "docs/SCALE.md": 1,
        "docs/OFFLINE.md": 1, "docs/EXPORT.md": 1,
    }  # fmt: skip
    return found[page]


def test_readme_api_example_runs_and_learns():
    namespace: dict = {}
    exec(compile(_python_blocks()[0], "docs/API.md", "exec"), namespace)
    returns = np.asarray(namespace["metrics"]["eval_return"])
    assert returns.shape == (4,)  # 20,000 steps, an evaluation every 5,000
    assert returns.max() >= -250.0 and returns[0] < -700.0
    assert namespace["action"].shape == (16, 1)
    assert np.isfinite(float(namespace["final"]["eval_return"]))


@pytest.mark.slow
def test_readme_ppo_example_learns_inverted_pendulum():
    # PPO's learning test through the functional API: brax/inverted_pendulum, eval return
    # >= 900 within 81,920 env steps (the ppo_inverted_pendulum preset's settings; seeds
    # 0-3 reached 1,000 by 51,200 steps on 2 CPU cores).
    namespace: dict = {}
    exec(
        compile("import jax\nimport jaxrl\n" + _python_blocks()[1], "docs/API.md", "exec"),
        namespace,
    )
    returns = np.asarray(namespace["metrics"]["eval_return"])
    assert returns.shape == (8,)
    assert returns.max() >= 900.0 and returns[0] < 900.0, returns


def test_the_brax_examples_run_with_brax_s_results():
    """README's three lines and docs/BRAX.md's example: Brax's arguments in, Brax's triple and
    progress out (8,192 physics steps: one training step of Brax's default 10,240 in the
    README; two intervals of two steps of 2,560 in BRAX.md, evaluated at 0, 5,120, 10,240)."""
    from jaxrl.benchmarks import peers

    peers.install_jax_shims()  # Brax's networks and inference function, built by the door
    namespace: dict = {}
    exec(compile(_python_blocks("README.md")[0], "README.md", "exec"), namespace)
    assert {"eval/episode_reward", "training/total_loss"} <= set(namespace["metrics"])
    assert set(namespace["params"][1]["params"]) == {f"hidden_{i}" for i in range(5)}
    namespace = {}
    exec(compile(_python_blocks("docs/BRAX.md")[0], "docs/BRAX.md", "exec"), namespace)
    assert [step for step, _ in namespace["steps"]] == [0, 5120, 10240]
    action, _ = namespace["policy"](np.zeros((3, 2), np.float32), None)
    assert action.shape == (3, 1) and np.all(np.abs(action) <= 1.0)


def test_the_brax_network_factory_example_runs_the_factory_s_own_networks():
    """docs/BRAX.md's network-injection example: a factory of the caller's, run as it is:
    `params` are its own trees (tanh hidden layers, a Gaussian without tanh and its learned
    std), Brax's inference function acts with them."""
    import jax

    from jaxrl.benchmarks import peers

    peers.install_jax_shims()
    namespace: dict = {}
    exec(compile(_python_blocks("docs/BRAX.md")[1], "docs/BRAX.md", "exec"), namespace)
    nets = namespace["my_networks"](2, 1)
    shapes = lambda tree: jax.tree.map(np.shape, tree)  # noqa: E731
    assert shapes(namespace["params"][1]) == shapes(nets.policy_network.init(jax.random.PRNGKey(0)))
    assert np.isfinite(namespace["metrics"]["training/total_loss"])
    action, _ = namespace["policy"](np.zeros((3, 2), np.float32), None)
    assert action.shape == (3, 1) and np.all(np.isfinite(action))  # a Gaussian's mean, unsquashed


def test_the_brax_training_metrics_example_gives_brax_s_training_logs():
    """docs/BRAX.md's log_training_metrics example: Brax's `episode/...` logs after every
    training step, beside the evaluation's metrics."""
    namespace: dict = {}
    exec(compile(_python_blocks("docs/BRAX.md")[2], "docs/BRAX.md", "exec"), namespace)
    training = namespace["training"]
    assert [step for step, _ in training] == [64 * (i + 1) for i in range(len(training))]
    assert {"episode/sum_reward", "episode/sps", "episode/policy_loss"} <= set(training[-1][1])
    evaluations = [m for _, m in namespace["logs"] if "eval/episode_reward" in m]
    assert len(evaluations) == 2  # at step 0 and at the end


def test_the_brax_sac_example_runs_with_brax_s_results():
    """docs/BRAX.md's SAC example: Brax's (normalizer, policy) pair, its inference function,
    and the evaluation's metrics after the prefill of 256 rows and two intervals."""
    from jaxrl.benchmarks import peers

    peers.install_jax_shims()
    namespace: dict = {}
    exec(compile(_python_blocks("docs/BRAX.md")[3], "docs/BRAX.md", "exec"), namespace)
    assert {"eval/episode_reward", "training/critic_loss"} <= set(namespace["metrics"])
    assert set(namespace["policy_params"]["params"]) == {f"hidden_{i}" for i in range(3)}
    assert int(namespace["normalizer_params"].count) == 2048
    action, _ = namespace["policy"](np.zeros((3, 2), np.float32), None)
    assert action.shape == (3, 1) and np.all(np.abs(action) <= 1.0)


def test_the_brax_crossq_example_runs_with_brax_s_results():
    """docs/BRAX.md's example of the other algorithms' door: CrossQ by Brax's sac.train
    arguments and its own options, Brax's metrics and normaliser, jaxrl's make_policy."""
    namespace: dict = {"obs": np.zeros((3, 2), np.float32)}
    exec(compile(_python_blocks("docs/BRAX.md")[4], "docs/BRAX.md", "exec"), namespace)
    assert {"eval/episode_reward", "training/critic_loss"} <= set(namespace["metrics"])
    normalizer, policy_params = namespace["params"]
    assert int(normalizer.count) == 2048 and ".actor_stats" in "".join(policy_params)
    assert namespace["action"].shape == (3, 1) and np.all(np.abs(namespace["action"]) <= 1.0)


def test_the_brax_jaxrl_choices_example_returns_brax_s():
    """docs/BRAX.md's `jaxrl_choices=True` example: Brax's triple, its evaluations at 0 and at
    the end, Brax's trees."""
    from jaxrl.benchmarks import peers

    peers.install_jax_shims()
    namespace: dict = {}
    exec(compile(_python_blocks("docs/BRAX.md")[5], "docs/BRAX.md", "exec"), namespace)
    assert {"eval/episode_reward", "training/total_loss"} <= set(namespace["metrics"])
    assert set(namespace["params"][1]["params"]) == {f"hidden_{i}" for i in range(5)}
    action, _ = namespace["policy"](np.zeros((3, 2), np.float32), None)
    assert action.shape == (3, 1) and np.all(np.abs(action) <= 1.0)


def test_readme_own_env_example_trains_by_object_and_by_name():
    namespace: dict = {}
    try:
        exec(compile(_python_blocks()[3], "docs/API.md", "exec"), namespace)
        # Holding still scores about -12 on Reach; the trained policy reaches 0 and stays.
        assert namespace["result"].final_eval_return > -8.0
        assert jaxrl.envs.make("mylab/Reach").episode_length == 25
        trainer = jaxrl.make_train(namespace["config"], jaxrl.sac.make(namespace["agent"]))
        assert trainer.env.episode_length == 25
    finally:
        jaxrl.envs.unregister("mylab/Reach")


def test_readme_first_commands_are_install_and_tests():
    commands = _blocks("bash")["README.md"]
    assert "pip install -e '.[dev]'" in commands[0] and "jaxrl train" in commands[0]
    assert commands[1].strip() == "python -m pytest tests"
    ci = (README.parent / ".ci" / "run").read_text()
    assert "pip install -e '.[dev]'" in ci and "python -m pytest tests" in ci


def test_readme_policy_example_runs_on_a_saved_run(tmp_path, monkeypatch):
    config = tiny.off_policy(total_steps=512, eval_every=256, normalize_observations=True)
    result = jaxrl.train(config, tiny.SAC, tmp_path / "runs" / "pendulum", progress=None)
    monkeypatch.chdir(tmp_path)
    obs = np.asarray(result.state.env_state.obs)  # raw observations, as an env returns them
    namespace = {"obs": obs}
    exec(compile(_python_blocks()[2], "docs/API.md", "exec"), namespace)
    assert namespace["action"].shape == (4, 1)
    state = result.state
    greedy = jaxrl.make_train(config, jaxrl.sac.make(tiny.SAC)).policy
    np.testing.assert_allclose(
        namespace["action"], greedy(state.agent, state.obs_stats, obs), rtol=1e-6, atol=1e-6
    )
    assert namespace["report"]["episodes"] == 10 and len(namespace["report"]["returns"]) == 10
    np.testing.assert_array_equal(namespace["alone"](obs), namespace["action"])
    assert (tmp_path / "pendulum.policy").is_file()


def test_the_export_example_runs_the_exported_policy_without_jax(tmp_path, monkeypatch):
    """docs/EXPORT.md: `jaxrl export runs/pendulum --out pendulum.onnx`, then its Python
    block, which gives load_policy's actions."""
    config = tiny.off_policy(normalize_observations=True)
    jaxrl.train(config, tiny.SAC, tmp_path / "runs" / "pendulum", progress=None)
    monkeypatch.chdir(tmp_path)
    assert ["export", "runs/pendulum", "--out", "pendulum.onnx"] in _readme_commands()
    assert cli.main(["export", "runs/pendulum", "--out", "pendulum.onnx"]) == 0
    namespace: dict = {}
    exec(compile(_python_blocks("docs/EXPORT.md")[0], "docs/EXPORT.md", "exec"), namespace)
    want = jaxrl.load_policy("runs/pendulum")(namespace["obs"])
    assert namespace["actions"].shape == (4, 1)
    np.testing.assert_allclose(namespace["actions"], np.asarray(want), atol=1e-5)


def _readme_commands() -> list[list[str]]:
    """Every `jaxrl ...` command of the bash blocks of README.md and the docs pages, in that
    order, split as the shell would."""
    commands = []
    for block in [block for blocks in _blocks("bash").values() for block in blocks]:
        for line in block.replace("\\\n", " ").splitlines():
            for segment in line.split("  #")[0].split("&&"):
                words = shlex.split(segment)
                while words and "=" in words[0] and not words[0].startswith("-"):
                    words = words[1:]  # VAR=value prefixes
                if words and words[0] == "jaxrl":
                    commands.append(words[1:])
    return commands


def test_readme_commands_parse(tmp_path, monkeypatch):
    """Each documented command's flags are accepted by its parser (nothing is run)."""
    monkeypatch.chdir(tmp_path)  # with a saved config where the README reads one
    train, agent, _ = resolve.build_configs(["--preset", "sac_pendulum"])
    saved = {"train": dataclasses.asdict(train), "agent": dataclasses.asdict(agent)}
    (tmp_path / "runs" / "pendulum").mkdir(parents=True)
    (tmp_path / "runs" / "pendulum" / "config.json").write_text(json.dumps(saved))
    commands = _readme_commands()
    seen = set()
    for argv in commands:
        command, rest = argv[0], argv[1:]
        seen.add(command)
        if command == "train" and "--resume" in rest:
            tyro.cli(cli.ResumeArgs, args=rest, registry=parsing.parser_registry())
        elif command == "train":
            train, agent, _ = resolve.build_configs([w for w in rest if w != "--help"])
            assert train.algo == resolve.agent_algo(agent)
        elif command == "eval":
            tyro.cli(cli.EvalArgs, args=rest, registry=parsing.parser_registry())
        elif command == "render":
            tyro.cli(cli.RenderArgs, args=rest, registry=parsing.parser_registry())
        elif command == "collect":
            tyro.cli(cli.CollectArgs, args=rest, registry=parsing.parser_registry())
        elif command == "export":
            tyro.cli(cli.ExportArgs, args=rest, registry=parsing.parser_registry())
        elif command == "plot":
            plot.build_parser().parse_args(rest)
        elif command == "sweep":
            out, plan, seeds, _ = sweep.plan_sweep(rest)
            assert len(plan) == 4 * len(seeds)
            assert {config.seed for _, _, config, _ in plan} == set(seeds)
        elif command == "scale" and "--from" in rest:
            assert not scale._parse(rest)[1], rest  # a folder's refit: its flags are scale's
        elif command == "scale":
            assert scale.main([*rest, "--dry-run"]) == 0, rest  # the grid checked, not trained
        elif command in ("list", "bench"):
            continue
        else:
            raise AssertionError(f"README or docs document an unknown command: jaxrl {command}")
    commands = {"train", "eval", "render", "collect", "export", "plot", "sweep", "scale", "list"}
    assert commands | {"bench"} <= seen


@pytest.mark.slow
def test_readme_run_folder_commands_work_as_written(tmp_path, monkeypatch, capsys):
    """The train, resume, eval, config, plot and collect examples (docs/RUNS.md, docs/CLI.md,
    docs/OFFLINE.md), run as the pages give them, the train commands first (about a minute on
    2 cores)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "datasets"))
    wanted = ("train", "eval", "plot", "collect")
    ran = []
    # docs/CLI.md (eval, plot) comes before docs/RUNS.md (train, resume) in PAGES: the run is
    # trained first, its commands in their order, then eval and plot in theirs.
    for argv in sorted(_readme_commands(), key=lambda argv: argv[0] != "train"):
        ours = {"runs/pendulum", "runs/pendulum/config.json", "runs/pendulum-s1"}
        if argv[0] not in wanted or not ours & set(argv):
            continue
        if argv[0] == "plot":
            argv = [w for w in argv if "*" not in w]  # no td3 runs here
        assert cli.main(argv) == 0, argv
        ran.append(argv)
    out = capsys.readouterr().out
    assert len(ran) == 9, ran
    for quality in ("expert", "medium", "replay"):
        assert (tmp_path / f"datasets/jaxrl/pendulum-{quality}-v0/data/metadata.json").is_file()
    namespace: dict = {}  # OFFLINE.md's Python example, on the dataset its commands wrote
    exec(compile(_python_blocks("docs/OFFLINE.md")[0], "docs/OFFLINE.md", "exec"), namespace)
    assert namespace["data"].rows == 100_000 and namespace["transitions"].obs.shape[0] == 100_000
    assert checkpoint.steps(tmp_path / "runs/pendulum/checkpoints")[-1] == 40_000
    assert "@ 40,000 env steps: return" in out
    assert (tmp_path / "curves.png").stat().st_size > 10_000
    saved = runs.read_config_json(tmp_path / "runs/pendulum-s1")
    assert saved["train"]["seed"] == 1
    assert dataclasses.asdict(runs.configs_from_json(saved)[1])["actor_hidden"] == (64, 64)


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_readme_is_a_front_page_that_links_every_docs_page():
    text = README.read_text()
    lines = text.splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move detail to docs/"
    fenced = False
    for number, line in enumerate(lines, 1):
        fenced ^= line.startswith("```")
        if not fenced and not line.startswith("```"):
            assert len(line) <= 100, f"README.md:{number} is {len(line)} characters long"
    linked = set(re.findall(r"\]\(([^)#\s]+)", text))
    assert set(README_LINKS) <= linked, sorted(set(README_LINKS) - linked)
    assert {str(page.relative_to(ROOT)) for page in PAGES[1:]} <= linked  # no page left unlinked
    images = re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", text)
    # The learning curves beside Brax's, and `jaxrl scale`'s frontier (issue 40): recorded
    # results, never a drawing made for the page.
    assert len(images) == 2, images
    assert all(image.startswith("benchmarks/results/") for image in images), images
    assert all((ROOT / image).is_file() for image in images), images


def test_every_relative_link_of_readme_and_docs_leads_to_a_file():
    checked = 0
    for page in [*PAGES, ROOT / "benchmarks" / "README.md"]:
        text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)  # links outside code
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):  # https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(ROOT)} links {target}"
            assert linked.exists(), f"{where}: no such file"
            assert linked.is_relative_to(ROOT), f"{where}: outside the repository"
            if anchor and linked.suffix == ".md":
                headings = re.findall(r"^#+ (.*)$", linked.read_text(), re.M)
                assert anchor in {_anchor(h) for h in headings}, f"{where}: no such heading"
            checked += 1
    assert checked >= 20
