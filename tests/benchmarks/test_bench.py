"""The benchmark suite end to end on its tiny suite: each case in its own process, well-formed
records, the markdown summary and the plots."""

import json
import pathlib
import time

import numpy as np
import pytest

from jaxrl.benchmarks import case as case_module
from jaxrl.benchmarks import parity_report, report, run
from jaxrl.benchmarks.suites import SUITES, Case


def test_tiny_suite_writes_records_summary_and_plots(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    out = results / "tiny-cpu.jsonl"
    lines = []
    records = run.run_suite("tiny", out, [], timeout=600, progress=lines.append)
    assert [r["case"] for r in records] == [c.name for c in SUITES["tiny"]()]
    assert len(out.read_text().splitlines()) == 3
    limit, sac, profile = (json.loads(line) for line in out.read_text().splitlines())
    for record in (limit, sac, profile):
        assert "error" not in record, record
        assert record["machine"]["cores"] >= 1 and record["machine"]["jax"]
        assert record["peak_rss_mb"] > 100  # jax alone takes more
    assert limit["system"] == "limit" and limit["env_steps_per_second"] > 0
    # 800 steps of 4 envs split into 2 chunks of 400 steps: an evaluation after each, and one
    # at step 0 (the untrained policy), before either.
    assert [e["env_steps"] for e in sac["evals"]] == [0, 400, 800]
    walls = [e["wall_seconds"] for e in sac["evals"]][1:]
    assert 0 < sac["xla_compile_seconds"] < sac["compile_seconds"] == walls[0] < walls[1]
    assert sac["env_steps_per_second"] == (800 - 400) / (walls[1] - walls[0])
    assert sac["final_return"] == sac["evals"][-1]["eval_return"]
    assert sac["updates_per_second"] > 0
    # The threshold is not reachable in 800 steps: recorded as not reached, not as a number.
    assert sac["seconds_to_threshold"] is None and sac["steps_to_threshold"] is None
    # The profile of the same run: each piece compiled and timed apart.
    assert profile["system"] == "profile" and profile["config"] == sac["config"]
    compile_s, run_s = profile["profile"]["compile"], profile["profile"]["run"]
    assert set(compile_s) == {"init", "env_step", "evaluate", "update", "chunk"}
    assert all(c["compile_seconds"] > 0 and c["trace_seconds"] > 0 for c in compile_s.values())
    assert all(run_s[k] > 0 for k in ("simulate", "learn", "evaluate", "chunk"))
    pieces = run_s["simulate"] + run_s["learn"] + run_s["evaluate"]
    assert abs(run_s["other"] - (run_s["chunk"] - pieces)) < 1e-9
    # sac_pendulum: 8 updates per step of all envs; 100 steps of 4 envs per chunk.
    assert profile["profile"]["updates_per_chunk"] == 100 * 8
    assert profile["profile"]["env_steps_per_chunk"] == 400
    summary = report.write(results)
    text = summary.read_text()
    assert "### Where the time goes" in text
    assert "### classic/pendulum (threshold -250)" in text and "jaxrl/sac" in text
    assert "env-steps/s at 4 envs" in text
    assert (results / "tiny-cpu-classic-pendulum.png").stat().st_size > 1000


def test_threshold_time_comes_from_the_first_evaluation_at_or_above_it():
    case = Case("jaxrl", "sac", "classic/pendulum", 4, threshold=-250.0)
    evals = [
        {"env_steps": 0, "wall_seconds": 3.0, "eval_return": -1200.0},
        {"env_steps": 100, "wall_seconds": 10.0, "eval_return": -900.0},
        {"env_steps": 200, "wall_seconds": 12.0, "eval_return": -240.0},
        {"env_steps": 300, "wall_seconds": 14.0, "eval_return": -100.0},
    ]
    summary = case_module.summarize(case, evals, updates=56.0)
    assert summary["seconds_to_threshold"] == 12.0 and summary["steps_to_threshold"] == 200
    assert summary["compile_seconds"] == 10.0  # the first evaluation after training began
    assert summary["env_steps_per_second"] == 200 / 4.0
    assert summary["updates_per_second"] == 4.0
    assert summary["final_return"] == -100.0


def test_the_report_reads_suite_records_only(tmp_path):
    """A records folder also holds the stand-alone scripts' records (gpu_kernels.py names its
    programs "case" too): the summary reads a suite's records, the newest of each case."""
    from jaxrl.benchmarks import report

    lines = [
        {"case": "jaxrl/sac/x/4/s0", "system": "jaxrl", "final_return": 1.0},
        {"case": "ppo-update", "cheapest": {}, "machine": {}},  # gpu_kernels.py
        {"preset": "sac_dmc", "eval_simulator": "own"},  # compile_chunk.py
        {"case": "jaxrl/sac/x/4/s0", "system": "jaxrl", "final_return": 2.0},
    ]
    path = tmp_path / "mixed-cpu.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert report.load(path) == [lines[-1]]


def test_every_suite_case_round_trips_through_json():
    for suite in SUITES.values():
        for case in suite():
            assert Case.from_json(case.to_json()) == case


@pytest.mark.parametrize(
    "suite",
    [
        "parity",
        "parity_long",
        "identical",
        "gpu-parity",
        "parity_dmc",
        "parity_dmc_more",
        "parity_dmc_ppo_more",
    ],
)
def test_parity_cases_give_jaxrl_exactly_the_peer_settings(suite):
    """Each jaxrl parity case parses, and its configs carry the peer's own hyperparameters and,
    PPO's (but those labelled "own", jaxrl's choices at Brax's settings), every one of Brax's
    implementation choices (docs/PARITY.md)."""
    from jaxrl.config import resolve

    cases = SUITES[suite]()
    peers = {(c.algo, c.env, c.seed): dict(c.peer) for c in cases if c.system == "brax"}
    # Cases of a jaxrl preset (gpu-parity's FastTD3) have no Brax peer.
    for case in (c for c in cases if c.system == "jaxrl" and not c.preset):
        peer = peers[(case.algo, case.env, case.seed)]
        train, agent, _ = resolve.build_configs(case_module.jaxrl_argv(case))
        assert (train.num_envs, train.total_steps) == (case.num_envs, case.total_steps)
        assert train.gamma == peer["discounting"]
        assert train.episode_length == peer["episode_length"]
        assert train.action_repeat == peer.get("action_repeat", 1)
        assert train.normalize_observations == peer["normalize_observations"]
        assert train.eval_envs == peer["num_eval_envs"] and peer["deterministic_eval"]
        assert train.obs_clip == 0.0 and agent.softplus_std
        assert agent.reward_scale == peer["reward_scaling"]
        # The same evaluation points: Brax's num_evals counts the one at the start.
        assert -(-train.total_steps // train.eval_every) == peer["num_evals"] - 1
        if case.algo == "sac":
            assert (train.batch_size, train.updates_per_step) == (
                peer["batch_size"],
                peer["grad_updates_per_step"],
            )
            prefill = -(-peer["min_replay_size"] // case.num_envs) * case.num_envs
            assert (train.buffer_size, train.learning_starts) == (
                peer["max_replay_size"],
                prefill + case.num_envs,  # Brax's first gradient step: after its prefill
            )
            assert agent.actor_lr == agent.critic_lr == peer["learning_rate"]
            assert agent.critic_layer_norm == peer.get("q_network_layer_norm", False)
            assert (agent.actor_hidden, agent.critic_hidden) == ((256, 256), (256, 256))
            assert (agent.tau, agent.init_alpha, agent.target_entropy_scale) == (0.005, 1, 0.5)
            assert train.warmup_actions == "policy" and not agent.actor_uses_updated_critic
            assert train.autoreset == "first" and agent.temperature_loss == "alpha"
            assert agent.truncation == "mask" and train.renormalize_rollout
            assert agent.temperature_draw == "own" and agent.kernel_init == "lecun_uniform"
        else:
            unrolls = peer["batch_size"] * peer["num_minibatches"] // case.num_envs
            assert train.unroll_length == peer["unroll_length"] * unrolls
            assert (agent.num_minibatches, agent.num_epochs) == (
                peer["num_minibatches"],
                peer["num_updates_per_batch"],
            )
            assert agent.learning_rate == peer["learning_rate"]
            assert agent.entropy_coef == peer["entropy_cost"]
            assert (agent.clip_epsilon, agent.gae_lambda, agent.max_grad_norm) == (0.3, 0.95, 0)
            assert agent.activation == "swish" and agent.value_coef == 0.5
            brax_mode = case.label != "own"
            assert train.renormalize_rollout == brax_mode
            assert agent.advantage_in_loss == brax_mode
            assert agent.gae_horizon == (peer["unroll_length"] if brax_mode else 0)
            assert agent.advantage_estimator == ("vtrace" if brax_mode else "gae")
            assert agent.truncation == ("mask" if brax_mode else "bootstrap")
            assert train.autoreset == ("first" if brax_mode else "random")
            assert agent.kernel_init == ("lecun_uniform" if brax_mode else "lecun_normal")
            resets = peer.get("num_resets_per_eval", 0)
            updates_per_eval = train.eval_every // (train.unroll_length * train.num_envs)
            assert train.reset_every == (updates_per_eval // resets if resets else 0)


def test_gpu_throughput_target_reports_the_fraction_of_the_limit_and_the_profile():
    gpu = {"backend": "gpu"}
    env = "playground/CheetahRun"
    records = [
        {"system": "limit", "env": env, "num_envs": 4096, "env_steps_per_second": 2.0e6},
        {"system": "jaxrl", "algo": "ppo", "env": env, "num_envs": 4096, "machine": gpu}
        | {"env_steps_per_second": 0.84e6},
        {"system": "profile", "algo": "ppo", "env": env, "num_envs": 4096, "machine": gpu}
        | {"profile": {"run": {"simulate": 1.0, "learn": 2.5, "evaluate": 0.5, "other": 1.0}}},
    ]
    records[2]["profile"]["run"]["chunk"] = 5.0
    (line,) = report.throughput_target(records)
    assert "42% of the simulator limit (target >= 50%): missed by 8% of the limit" in line
    assert "simulate 20%, learn 50%, evaluate 10%, other 20%" in line
    records[1]["env_steps_per_second"] = 1.2e6
    assert (
        "60% of the simulator limit (target >= 50%): met." in report.throughput_target(records)[0]
    )
    records[1]["machine"] = {"backend": "cpu"}  # the target is a GPU's
    assert report.throughput_target(records) == []


def test_compile_target_by_both_clocks_and_by_the_first_chunk_alone_for_old_records():
    def run(system, algo, seed, first_chunk, events):
        return {"system": system, "algo": algo, "seed": seed, "env": "brax/inverted_pendulum"} | {
            "seconds_to_threshold": 10.0,
            "compile_seconds": first_chunk,
            "compile_total_seconds": events,
        }

    records = [run("brax", "sac", s, 40.0 + 2 * s, 44.0 + 2 * s) for s in (0, 1)]
    records += [run("jaxrl", "crossq", s, 22.0, 20.0 + s) for s in (0, 1)]
    records += [run("jaxrl", "sac", s, 18.0, 16.0) for s in (0, 1)]
    lines = report.targets(records)
    first = next(line for line in lines if line.startswith("- Compile (to the first"))
    assert "Brax SAC's 41.0 s" in first and "jaxrl/crossq 0.54" in first
    assert "jaxrl/sac 0.44" in first and first.endswith("met by 1 of 2.")
    (events,) = [line for line in lines if line.startswith("- Compile by JAX's compile events")]
    assert "Brax SAC's 45.0 s: jaxrl/sac 0.36, jaxrl/crossq 0.46; met by 2 of 2." in events
    records[-1]["compile_total_seconds"] = None  # a record from before the clock existed
    assert not [line for line in report.targets(records) if "compile events" in line]


MACHINE = {"cpu": "test", "cores": 2, "backend": "cpu", "device_count": 1, "devices": ["cpu"]}
MACHINE |= {"jax": "0", "brax": "0", "mujoco": "0"}
RECORDS = [  # hand-made, as benchmarks.case writes them (the fields the summary reads)
    {"case": "limit/random/classic/pendulum/4/s0", "system": "limit", "algo": "random"}
    | {"env": "classic/pendulum", "num_envs": 4, "env_steps_per_second": 1000.0}
    | {"machine": MACHINE},
    {"case": "jaxrl/sac/classic/pendulum/4/s0", "system": "jaxrl", "algo": "sac", "seed": 0}
    | {"env": "classic/pendulum", "num_envs": 4, "threshold": -250.0, "machine": MACHINE}
    | {"seconds_to_threshold": None, "steps_to_threshold": None, "compile_seconds": 3.0}
    | {"env_steps_per_second": 100.0, "updates_per_second": 50.0, "final_return": -900.0}
    | {"peak_rss_mb": 500.0}
    | {
        "evals": [
            {"env_steps": 400, "wall_seconds": 3.0, "eval_return": -1200.0},
            {"env_steps": 800, "wall_seconds": 7.0, "eval_return": -900.0},
        ]
    },
]


def _write_records(path: pathlib.Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))


def _package_files() -> dict[str, tuple[int, int]]:
    """Every file of the installed benchmarks package (size, mtime), bytecode caches aside."""
    package = pathlib.Path(run.__file__).resolve().parent
    return {
        str(f.relative_to(package)): (f.stat().st_size, f.stat().st_mtime_ns)
        for f in package.rglob("*")
        if f.is_file() and "__pycache__" not in f.parts
    }


def test_report_only_writes_under_the_current_folder_not_the_package(tmp_path, monkeypatch):
    """The defaults from another folder: the repository's layout there, ./benchmarks/RESULTS.md
    over ./benchmarks/results/ (records and plots), and nothing in the installed package."""
    _write_records(tmp_path / "benchmarks" / "results" / "tiny-cpu.jsonl")
    before = _package_files()
    monkeypatch.chdir(tmp_path)
    assert run.main(["--report-only"]) == 0
    assert _package_files() == before
    summary = tmp_path / "benchmarks" / "RESULTS.md"
    text = summary.read_text()
    assert "records in `results/`" in text and "### classic/pendulum (threshold -250)" in text
    assert "![tiny-cpu-classic-pendulum](results/tiny-cpu-classic-pendulum.png)" in text
    assert (tmp_path / "benchmarks" / "results" / "tiny-cpu-classic-pendulum.png").is_file()
    written = {str(f.relative_to(tmp_path)) for f in tmp_path.rglob("*") if f.is_file()}
    assert written == {
        "benchmarks/RESULTS.md",
        "benchmarks/results/tiny-cpu.jsonl",
        "benchmarks/results/tiny-cpu-classic-pendulum.png",
    }


@pytest.mark.parametrize(
    "argv,records,summary",
    [
        ([], "benchmarks/results/tiny-{backend}.jsonl", "benchmarks/RESULTS.md"),
        (["--out", "mine/tiny.jsonl"], "mine/tiny.jsonl", "mine/RESULTS.md"),
        (["--results", "res"], "res/tiny-{backend}.jsonl", "res/RESULTS.md"),
        (["--results", "res", "--out", "res/a.jsonl"], "res/a.jsonl", "res/RESULTS.md"),
    ],
)
def test_the_records_of_a_run_reach_its_summary(tmp_path, monkeypatch, argv, records, summary):
    """Where the records go (the default, --out, --results) the summary and plots read them,
    all under the current folder; the cases themselves are stubbed (a hand-made record)."""
    import jax

    ran = []

    def run_suite(suite, out, only, timeout, jobs=1):
        ran.append(out)
        _write_records(out)

    monkeypatch.setattr(run, "run_suite", run_suite)
    root = tmp_path.resolve()  # bench resolves its paths
    monkeypatch.chdir(root)
    before = _package_files()
    assert run.main(["--suite", "tiny", *argv]) == 0
    assert _package_files() == before
    assert ran == [root / records.format(backend=jax.default_backend())]
    text = (root / summary).read_text()
    assert "### classic/pendulum (threshold -250)" in text and "jaxrl/sac" in text
    png = ran[0].parent / f"{ran[0].stem}-classic-pendulum.png"
    assert png.is_file()
    written = {f for f in root.rglob("*") if f.is_file()}
    assert written == {ran[0], root / summary, png}


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--suite", "tiny", "--only", "nomatch"], "no case of suite 'tiny' matches"),
        (["--report-only"], "no records (*.jsonl)"),
        (["--report-only", "--only", "brax/"], "--report-only runs none"),
        (["--out", "a/x.jsonl", "--results", "b"], "is not in --results b"),
        (["--suite", "tiny", "--timeout", "0"], "--timeout must be > 0"),
        (["--suite", "tiny", "--jobs", "0"], "--jobs must be >= 1"),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.chdir(tmp_path)
    assert run.main(argv) == 2
    assert message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_steady_rate_leaves_out_compilation_between_the_points():
    """Brax compiles some programs only when first called, after its first evaluation: those
    seconds are not training time."""
    case = Case("brax", "sac", "classic/pendulum", 4)
    evals = [
        {"env_steps": 100, "wall_seconds": 10.0, "eval_return": 0.0, "compile_seconds_before": 7},
        {"env_steps": 200, "wall_seconds": 22.0, "eval_return": 0.0, "compile_seconds_before": 15},
        {"env_steps": 300, "wall_seconds": 24.0, "eval_return": 0.0, "compile_seconds_before": 15},
    ]
    summary = case_module.summarize(case, evals, updates=None)
    assert summary["env_steps_per_second"] == 200 / (14.0 - 8.0)
    assert summary["steady_compile_seconds"] == 8.0


def test_rate_without_evaluations_over_the_window_with_no_compilation():
    """Brax's Evaluator times each evaluation, its recompilations included: the rate without
    evaluations starts at the last point with compilation before it, and takes out the
    evaluations after that point (the one at it ran before the sub-window began)."""
    point = lambda steps, wall, evaluated, compiled: {  # noqa: E731
        "env_steps": steps,
        "wall_seconds": wall,
        "eval_return": 0.0,
        "eval_seconds": evaluated,
        "compile_seconds_before": compiled,
    }
    evals = [
        point(0, 5.0, 4.0, 3),
        point(100, 10.0, 3.0, 7),
        point(200, 22.0, 9.0, 15),  # an evaluation that compiled for 8 s
        point(300, 24.0, 0.5, 15),
        point(400, 27.0, 1.0, 15),
    ]
    # From 200 to 400: 5 s, 1.5 of them evaluating.
    assert parity_report.rate_without_evaluations(evals) == 200 / 3.5
    evals[3]["eval_seconds"] = None  # one evaluation untimed (jaxrl's): no such rate
    assert parity_report.rate_without_evaluations(evals) is None
    evals[4]["compile_seconds_before"] = 16  # compiled up to the last point: nothing settled
    evals[3]["eval_seconds"] = 0.5
    assert parity_report.rate_without_evaluations(evals) is None


def test_compile_clock_counts_every_program_and_marks_evaluation_points():
    import time

    import jax
    import jax.numpy as jnp

    clock = case_module.CompileClock()
    started = time.perf_counter()
    jax.jit(lambda x: jnp.sin(x) * 3.0 + 1.25).lower(jnp.ones(7)).compile()
    record = clock.record()
    parts = record["compile_parts"]
    assert parts["trace"] > 0 and parts["lower"] > 0 and parts["xla"] > 0
    assert record["compile_total_seconds"] == pytest.approx(sum(parts.values()))
    points = [{"wall_seconds": -1.0}, {"wall_seconds": time.perf_counter() - started}]
    clock.mark(points, started)
    assert points[0]["compile_seconds_before"] == 0
    assert points[1]["compile_seconds_before"] == pytest.approx(record["compile_total_seconds"])


def _speed(system, algo, seed, rate, compile_, wall, evaluated=None):
    """A record; `evaluated`: the seconds of each of its two evaluations after the first
    (Brax's Evaluator), 500 env steps apart, 1 s of wall-clock each interval."""
    evals = [
        {"env_steps": 500 * i, "wall_seconds": 10.0 + i, "eval_seconds": evaluated}
        for i in range(1, 4)
    ]
    return {
        "system": system,
        "algo": algo,
        "env": "brax/inverted_pendulum",
        "seed": seed,
        "evals": evals,
        "env_steps": 1000,
        "env_steps_per_second": rate,
        "compile_total_seconds": compile_,
        "total_seconds": wall,
        "peak_rss_mb": 100.0,
        "final_return": 1.0,
    }


def test_identical_section_gives_jaxrl_over_brax_ratios_of_the_seed_means():
    records = [
        _speed("jaxrl", "sac", 0, 3000.0, 20.0, 50.0),
        _speed("jaxrl", "sac", 1, 5000.0, 30.0, 70.0),
        _speed("brax", "sac", 0, 2000.0, 60.0, 120.0, evaluated=0.5),
        _speed("brax", "sac", 1, 2000.0, 40.0, 120.0, evaluated=0.75),
        _speed("jaxrl", "ppo", 0, 1000.0, 60.0, 10.0),
        _speed("brax", "ppo", 0, 1000.0, 60.0, 10.0),
    ]
    lines = parity_report.identical_section("identical-cpu", records)
    sac = next(line for line in lines if line.startswith("| sac | brax/inverted_pendulum | 2.00x"))
    # Against Brax's training alone: 1,000 steps in 2 s less 1 or 1.5 s of evaluations, a
    # mean of 1,500 env-steps/s, jaxrl's 4,000 over it.
    assert "| 2.00x | 2.67x | 0.50x | 0.50x | throughput met, compile met |" in sac
    ppo = next(line for line in lines if line.startswith("| ppo | brax/inverted_pendulum | 1.00x"))
    assert "| 1.00x | - | 1.00x | 1.00x | throughput missed, compile missed" in ppo
    row = "| sac | brax/inverted_pendulum | jaxrl | 2 | 1,000 | 4,000.0 ± 1,000.0 | 25.0 ± 5.0 |"
    assert any(line.startswith(row) for line in lines)


def test_report_skips_the_stand_alone_scripts_records(tmp_path):
    """pql_split.py and robots.py keep their records beside the suites' (no "case" field)."""
    (tmp_path / "pql-split-cpu.jsonl").write_text(json.dumps({"layout": "split"}) + "\n")
    summary = report.write(tmp_path)
    assert "pql-split" not in summary.read_text()


def test_jobs_run_cases_at_once_and_gather_every_record(tmp_path, monkeypatch):
    """--jobs 3: the cases run at once, each writing its own part file; every record reaches
    the records file once, marked with concurrent_jobs, a failed case as an error record, and
    no part file is left behind."""
    import threading

    running, most = [0], [0]
    lock = threading.Lock()

    def run_case(case, part, env, timeout):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.3)
        with lock:
            running[0] -= 1
        if case.system == "profile":
            return True, "Traceback...\nValueError: boom", [], ""
        line = json.dumps({"case": case.name, "system": "limit", "env_steps_per_second": 1.0})
        part.write_text(line + "\n")
        return False, "", [line], ""

    monkeypatch.setattr(run, "_run_case", run_case)
    out = tmp_path / "tiny.jsonl"
    records = run.run_suite("tiny", out, [], 10.0, progress=lambda _: None, jobs=3)
    assert most[0] == 3
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["case"] for r in lines) == sorted(c.name for c in SUITES["tiny"]())
    assert all(r["concurrent_jobs"] == 3 for r in lines) and len(records) == 3
    assert [r["error"] for r in lines if "error" in r] == ["Traceback...\nValueError: boom"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.jsonl"]


@pytest.mark.parametrize(
    "suite, algo, name, seeds",
    [
        ("parity_dmc_more", "sac", "jaxrl/sac/playground/ReacherEasy/128/seeds20-24",
         range(20, 25)),
        ("parity_dmc_ppo_more", "ppo", "jaxrl/ppo/playground/CartpoleBalance/64/seeds5-9",
         range(5, 10)),
    ],
)  # fmt: skip
def test_more_seeds_start_past_the_first_five_on_both_sides(suite, algo, name, seeds):
    """A parity_dmc case's extra seeds, both systems, at the case's own settings."""
    cases = SUITES[suite]()
    jaxrl_cases = [c for c in cases if c.system == "jaxrl"]
    assert [c.name for c in jaxrl_cases] == [name]
    assert sorted(c.seed for c in cases if c.system == "brax") == list(seeds)
    first = [c for c in SUITES["parity_dmc"]() if c.env == jaxrl_cases[0].env]
    assert not {c.name for c in first} & {c.name for c in cases}  # records never replace
    same = [c for c in first if c.system == "jaxrl" and c.algo == algo]
    assert [c.options for c in same] == [c.options for c in jaxrl_cases]  # the same settings


def test_rerun_script_records_a_first_run_and_re_runs_over_one_store(tmp_path, monkeypatch):
    """benchmarks/rerun.py (issue 39's GPU check of the store): fresh processes over one cache
    folder; the first run stores the chunk and the reset, the re-runs keep that store, and an
    unknown preset's failure is recorded, not raised."""
    from jaxrl.benchmarks import rerun

    monkeypatch.setenv("JAXRL_PROGRAM_STORE", "1")  # the suite's default is off (conftest.py)
    out = tmp_path / "rerun.jsonl"
    argv = ["sac_pendulum", "--steps", "1024", "--libraries", "cusolver", "--from-cache"]
    argv += ["--reruns", "1", "--unprefetched", "--train-args", "--num-envs 4"]
    rerun.main([*argv, "--out", str(out)])
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["env"] == "classic/pendulum" and record["device"]
    # After the store is emptied, the programs from JAX's cache are stored again and loaded.
    names = ("first", "rerun", "unprefetched", "rerun_libraries", "rerun_libraries_2",
             "fresh_libraries", "fresh_libraries_2", "from_cache", "from_store")  # fmt: skip
    for name in names:
        assert record[f"{name}_compile_seconds"] > 0 and f"{name}_error" not in record
        assert record[f"{name}_wall_seconds"] > record[f"{name}_compile_seconds"]
        assert record[f"{name}_stored"] == ["chunk", "reset", "start"]  # start: step 0's evaluation
    assert "rerun_2_compile_seconds" not in record  # --reruns 1: one re-run of each kind

    # Each run's log says what the store did with each program: the first run and the run
    # over JAX's cache stored them (the chunk from the cache's bytes there), the others loaded.
    def outcomes(name):
        return {(n["kind"], n["outcome"], n.get("source")) for n in record[f"{name}_store_log"]}

    start = ("start-evaluation", "stored", "xla")
    for name in ("first", "fresh_libraries"):
        assert outcomes(name) == {("chunk", "stored", "xla"), ("reset", "stored", "xla"), start}
    # The reset and step 0's evaluation compile in about JAX's 1 s cache minimum, so whether
    # JAX's cache kept them depends on the machine's speed (CI's slower one keeps the
    # evaluation): either source is right for them; the chunk, far above it, must be the cache's.
    from_cache = {kind: (outcome, source) for kind, outcome, source in outcomes("from_cache")}
    assert from_cache["chunk"] == ("stored", "cache")
    for kind in ("reset", "start-evaluation"):
        assert from_cache[kind] in {("stored", "xla"), ("stored", "cache")}, kind
    assert len(outcomes("from_cache")) == 3
    loading = ("rerun", "unprefetched", "rerun_libraries", "rerun_libraries_2",
               "fresh_libraries_2", "from_store")  # fmt: skip
    for name in loading:
        assert outcomes(name) == {
            ("chunk", "loaded", None),
            ("reset", "loaded", None),
            ("start-evaluation", "loaded", None),
        }
    assert record["train_args"] == "--num-envs 4"
    bad = rerun.measure("no_such_preset", "classic/pendulum", 512, "", 60)
    assert bad["first_compile_seconds"] is None and "no_such_preset" in bad["first_error"]


def test_a_timed_out_case_keeps_where_its_time_went(tmp_path, monkeypatch):
    """The case streams its compile events and progress to stderr; a case killed by its
    timeout keeps their tail in its error record, and the report shows the timeout."""
    import io
    import subprocess

    log = io.StringIO()
    clock = case_module.CompileClock(log=log)
    clock._record(case_module.COMPILE_EVENTS[0], 34.2)
    clock._record(case_module.COMPILE_EVENTS[2], 0.2)  # under a second: not written
    clock._record(case_module.COMPILE_EVENTS[2], 83.9)
    written = log.getvalue().splitlines()
    assert len(written) == 2
    assert written[0].startswith("[case] ") and written[0].endswith(": trace 34.2 s")
    assert written[1].endswith(": xla 83.9 s")
    assert clock.record()["compile_parts"] == pytest.approx(
        {"trace": 34.2, "lower": 0.0, "xla": 84.1}
    )

    # The evaluations it printed (`case.run_jaxrl`) stay in its record, not in the tail.
    points = [
        {"env_steps": 400, "wall_seconds": 50.5, "eval_return": -900.0, "eval_return_std": 3.0},
        {"env_steps": 800, "wall_seconds": 99.0, "eval_return": -400.0, "eval_return_ci_low": -1.0},
    ]
    printed = [f"[case] {p['wall_seconds']} s: evaluation {json.dumps(p)}" for p in points]

    def killed(*args, **kwargs):
        stderr = "\n".join(["WARNING: noise", written[0], printed[0], written[1], printed[1]])
        raise subprocess.TimeoutExpired(args[0], kwargs["timeout"], stderr=stderr.encode())

    monkeypatch.setattr(run.subprocess, "run", killed)
    out = tmp_path / "tiny-cpu.jsonl"
    lines = []
    records = run.run_suite("tiny", out, ["limit/"], timeout=215, progress=lines.append)
    error = records[0]["error"].splitlines()
    assert error == [*written, "timed out after 215 s"]
    assert lines[-1].endswith("failed: timed out after 215 s")
    assert records[0]["partial_evals"] == points
    # The record says which case it is, as a finished case's does.
    (case,) = [c for c in SUITES["tiny"]() if c.system == "limit"]
    assert {k: records[0][k] for k in ("case", "system", "env", "num_envs", "suite")} == {
        "case": case.name,
        "system": "limit",
        "env": case.env,
        "num_envs": 4,
        "suite": "tiny",
    }
    assert json.loads(out.read_text()) == json.loads(json.dumps(records[0]))


def test_a_run_prints_each_evaluation_as_its_record_keeps_it(capsys):
    """case.run_jaxrl prints each chunk's evaluation as it ends; read back from its error
    output (as a timeout leaves it), they are the evaluations its record keeps: each seed's
    mean, spread and 95% interval."""
    from jaxrl.run.rows import seed_summary

    (sac,) = [c for c in SUITES["tiny"]() if c.system == "jaxrl"]
    two = Case(**{**sac.__dict__, "seeds": 2})
    evals, _, _ = case_module.run_jaxrl(two)
    points = report.partial_evals(capsys.readouterr().err)
    assert [p["env_steps"] for p in points] == [e["env_steps"] for e in evals] == [0, 400, 800]
    for point, full in zip(points, evals, strict=True):
        summary = seed_summary(full["eval_returns"])
        assert point["eval_return"] == pytest.approx(full["eval_return"])
        assert point["eval_return_std"] == pytest.approx(float(np.std(full["eval_returns"])))
        assert point["eval_return_ci_low"] == pytest.approx(summary["eval_return_ci_low"])
        assert point["eval_return_ci_high"] == pytest.approx(summary["eval_return_ci_high"])
        assert point["wall_seconds"] == pytest.approx(full["wall_seconds"])


# A progress line of a case from before failed records kept their evaluations (the REDQ run
# of 2026-12-07, benchmarks/results/dmc_algos-cpu.jsonl).
OLD_PROGRESS = (
    "[case] 8302.9 s: [redq playground/ReacherEasy]    75,264/100,352 steps |        9 "
    "env-steps/s | ETA 45:53 | eval    790.17 ± 64.0 | train ep    703.09"
)


def test_a_failed_record_of_before_is_known_by_its_suite_and_its_progress_lines(tmp_path):
    """report.load(failed=True): an old error record (only the case's name, its suite and
    its error) gets its case's fields from the suite and its evaluations from the progress
    lines its error kept; a case that finished keeps its finished record whatever failed
    after it; without `failed` no error record is read."""
    name = "jaxrl/redq/playground/ReacherEasy/16/seeds5"
    first = "[case] 1435.1 s: [redq playground/ReacherEasy]    12,544/100,352 steps |        9 "
    first += "env-steps/s | ETA ? | eval     68.80 ± 63.3"
    error = "\n".join(["[case] 3.1 s: trace 1.8 s", first, OLD_PROGRESS, "timed out after 9600 s"])
    gone = {"case": "jaxrl/redq/no-such-task/16/seeds5", "suite": "dmc_algos", "error": "x"}
    done = {"case": "jaxrl/sac/x/4/s0", "system": "jaxrl", "final_return": 1.0}
    rows = [{"case": name, "suite": "dmc_algos", "error": error}, gone, done]
    rows.append({**done, "system": "jaxrl", "suite": "dmc_algos", "error": "later"})
    path = tmp_path / "dmc_algos-cpu.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert report.load(path) == [done]
    loaded, old = report.load(path, failed=True)
    assert loaded == done
    assert (old["algo"], old["env"], old["total_steps"], old["seeds"]) == (
        "redq",
        "playground/ReacherEasy",
        100_352,
        5,
    )
    assert old["partial_evals"] == [
        {"env_steps": 12_544, "wall_seconds": 1435.1, "eval_return": 68.8, "eval_return_std": 63.3},
        {
            "env_steps": 75_264,
            "wall_seconds": 8302.9,
            "eval_return": 790.17,
            "eval_return_std": 64.0,
        },
    ]


def test_gpu_kernels_says_what_it_lacks_and_exits_2(tmp_path):
    """`python -m jaxrl.benchmarks.gpu_kernels` without jax's CUDA plugin (as in the suite's
    venv) or with a case it does not know: a message naming the problem, exit code 2, no
    traceback, nothing written."""
    import importlib.util
    import subprocess
    import sys

    out = tmp_path / "kernels.jsonl"
    cases = [(["ppo-update", "no-such"], "no such case no-such; cases: ppo-update,")]
    if importlib.util.find_spec("jax_plugins") is None:  # with the plugin it would compile
        cases.append((["ppo-update"], "needs jax's CUDA plugin: pip install 'jax[cuda12]=="))
    for args, message in cases:
        done = subprocess.run(
            [sys.executable, "-m", "jaxrl.benchmarks.gpu_kernels", *args, "--out", str(out)],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert message in done.stderr and "Traceback" not in done.stderr
        assert not out.exists()


def test_results_md_sections_are_what_the_committed_records_give():
    """Each section of benchmarks/RESULTS.md is the report's own reading of the records beside
    it (a report change that alters a table, or fails on real records, shows here)."""
    folder = pathlib.Path(run.__file__).resolve().parent
    summary = (folder / "RESULTS.md").read_text()
    checked = 0
    for path in sorted((folder / "results").glob("*.jsonl")):
        writer, records = report.read(path)
        if records:
            lines = writer(path.stem, records)
            assert "\n".join(lines) in summary, path.stem
            checked += 1
    assert checked >= 10
