"""Offline and offline-to-online RL validated on a task this CPU affords (issue 70, item 4).

    python -m jaxrl.benchmarks.offline_validate --task pendulum --work /tmp/offline \
        --out benchmarks/results/offline-validate-cpu.jsonl

For one task, in one process, through jaxrl's own API (`driver.train`, `collect.collect`):
1. the expert: the task's SAC preset, a checkpoint after every chunk;
2. three datasets, D4RL's qualities: `medium` (the checkpoint whose greedy return is nearest
   the middle of random play's and the expert's, played with noise 0.1), `expert-noisy` (the
   final policy with noise 0.3) and `replay` (the medium checkpoint's replay buffer: every
   transition of training up to it, D4RL's medium-replay); each normalised by the expert's
   greedy return (100) and random play's (0);
3. each offline algorithm on each dataset, `seeds` seeds in one vmapped program: the final
   greedy return, as D4RL's score and as a percentage of the behaviour policy's (the
   dataset's own episodes: 100 = as good as the data);
4. offline-to-online: E2O pre-trained on the medium data then fine-tuned online, against SAC
   from scratch with the same online env steps, both curves, and the largest dip below the
   last offline evaluation after the switch (E2O's claim: none).

One JSON line per dataset, offline run and online run. Every network is the task's small
one (`Task.hidden`) so that 5 seeds of a 10-critic ensemble fit this CPU's budget.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pathlib
import time

import numpy as np

from jaxrl.benchmarks.tables import fmt


@dataclasses.dataclass(frozen=True)
class Task:
    env: str
    expert_preset: str
    dataset_steps: int  # transitions per played dataset
    offline_updates: int
    online_steps: int
    hidden: tuple[int, ...]
    eval_envs: int = 16
    offline_evals: int = 4
    online_evals: int = 5
    expert_steps: int | None = None  # None: the preset's
    expert_args: tuple[str, ...] = ()  # more of the expert's flags (its env, its evaluations)
    collect_envs: int | None = None  # envs a played dataset is collected in (None: the run's)
    actor_hidden: tuple[int, ...] | None = None  # None: `hidden`


TASKS = {
    # The pendulum: SAC's preset reaches about -130 in 20,000 env steps; its single action
    # dimension leaves EDAC's diversity term without a gradient (EDAC is SAC-N there).
    "pendulum": Task("classic/pendulum", "sac_pendulum", 20_000, 8_000, 10_000, (64, 64)),
    # The whole pipeline in about a minute (tests/benchmarks/test_offline_validate.py).
    "smoke": Task(
        "classic/pendulum",
        "sac_pendulum",
        1_024,
        128,
        1_024,
        (16,),
        eval_envs=4,
        offline_evals=2,
        online_evals=2,
        expert_steps=6_000,
    ),
    # Two action dimensions, where EDAC's diversity term has a gradient. SAC's DM Control
    # preset (128 envs) evaluated 8 times for the medium checkpoint; the played datasets in 16
    # envs, so that 50,000 rows hold whole 1,000-step episodes. A 64-wide actor cloned the
    # noisy expert's data to about 300 where a 256-wide one reached 650-900 in 16,000 updates
    # (benchmarks/notes/2026-12-07-offline-reacher.md); the critics stay 64 wide, for the
    # 10-critic ensembles' cost here.
    "reacher": Task(
        "playground/ReacherEasy",
        "sac_dmc",
        50_000,
        16_000,
        20_480,
        (64, 64),
        actor_hidden=(256, 256),
        expert_steps=100_352,
        expert_args=(
            "--env",
            "playground/ReacherEasy",
            "--eval-every",
            "12544",
            "--eval-envs",
            "16",
        ),
        collect_envs=16,
    ),
}

# algo -> (agent fields beyond the widths, normalise observations): each paper's default
# ensemble and penalties; TD3+BC normalises the states (its paper), the others do not.
OFFLINE = {
    "td3_bc": ({}, True),
    "rebrac": ({}, False),
    "sac_n": ({"num_critics": 10}, False),
    "edac": ({"num_critics": 10, "eta": 1.0}, False),
    "sac_rnd": ({}, False),
}
QUALITIES = ("medium", "expert-noisy", "replay")


def _agent(task: Task, algo: str, **fields):
    from jaxrl import agents

    actor = task.actor_hidden or task.hidden
    return agents.get(algo).config_cls(actor_hidden=actor, critic_hidden=task.hidden, **fields)


def _interval(values) -> dict:
    from jaxrl.run.rows import seed_summary

    s = seed_summary([float(v) for v in values])
    return {"mean": s["eval_return_mean"], "low": s["eval_return_ci_low"],
            "high": s["eval_return_ci_high"]}  # fmt: skip


def _returns(history: list[dict]) -> list[list[float]]:
    """Each evaluation's greedy returns, one per seed ([evals][seeds])."""
    return [list(map(float, row.get("eval_returns", [row["eval_return"]]))) for row in history]


def pick_medium(curve: list[tuple[int, float]]) -> int:
    """The step of the expert's evaluation (its last left out) whose return is nearest the
    middle of its worst (about random play's, the untrained policy's) and its last."""
    final = curve[-1][1]
    middle = (min(r for _, r in curve) + final) / 2
    return min(curve[:-1], key=lambda c: abs(c[1] - middle))[0]


def last_offline(phases: list[str]) -> int:
    """The index of the last offline evaluation (ValueError where there is none)."""
    return max(i for i, p in enumerate(phases) if p == "offline")


def largest_dip(phases: list[str], means: list[float]) -> tuple[float, float | None]:
    """(the last offline evaluation's mean return, the largest fall below it of an online
    evaluation's mean: 0 where none falls below, None where no online evaluation follows)."""
    last = last_offline(phases)
    after = means[last + 1 :]
    return means[last], (min(0.0, min(after) - means[last]) if after else None)


def train_expert(task: Task, work: pathlib.Path, log) -> dict:
    from jaxrl.config import resolve
    from jaxrl.run import driver

    out = work / "expert"
    from jaxrl.config.options import RunOptions

    argv = ["--preset", task.expert_preset, *task.expert_args]
    argv += ["--steps", str(task.expert_steps)] if task.expert_steps else []
    train, agent, _ = resolve.build_configs(argv)
    tick = time.perf_counter()
    every_chunk = RunOptions(checkpoint_every=1, keep_checkpoints=0)  # the medium's among them
    result = driver.train(train, agent, out, progress=None, options=every_chunk)
    curve = [(int(r["env_steps"]), float(r["eval_return"])) for r in result.history]
    log(f"expert: {curve} in {time.perf_counter() - tick:.0f} s")
    return {"run": str(out), "curve": curve, "return": curve[-1][1]}


def make_datasets(task: Task, name: str, expert: dict, work: pathlib.Path, log) -> dict:
    """The three datasets: quality -> (id, the collection's report)."""
    from jaxrl.data import collect

    final = expert["return"]
    medium_step = pick_medium(expert["curve"])
    plans = {
        "medium": dict(
            steps=task.dataset_steps,
            noise=0.1,
            checkpoint=medium_step,
            expert_score=final,
            envs=task.collect_envs,
        ),
        "expert-noisy": dict(
            steps=task.dataset_steps, noise=0.3, expert_score=final, envs=task.collect_envs
        ),
        "replay": dict(replay=True, checkpoint=medium_step, expert_score=final),
    }  # fmt: skip  (one expert score for all three, as D4RL's ref_max_score is per task)
    made = {}
    for quality, fields in plans.items():
        dataset_id = f"jaxrl/{name}-{quality}-v0"
        settings = collect.CollectSettings(expert["run"], dataset_id, **fields)
        report = collect.collect(settings, log=lambda line: None)
        made[quality] = {"id": dataset_id, "medium_step": medium_step, **fields, **report}
        behaviour = fmt(report["behaviour_return"], ".1f", "- (no episode ended)")
        log(f"{quality}: {report['episodes']} episodes, behaviour {behaviour}")
    return made


def offline_run(task: Task, algo: str, dataset: dict, seeds: int) -> dict:
    from jaxrl.config import TrainConfig
    from jaxrl.data import minari_format
    from jaxrl.run import driver

    fields, normalize = OFFLINE[algo]
    config = TrainConfig(
        env=task.env, num_envs=4, eval_envs=task.eval_envs, total_steps=0,
        offline_updates=task.offline_updates,
        offline_eval_every=task.offline_updates // task.offline_evals, dataset=dataset["id"],
        batch_size=256, updates_per_step=8, normalize_observations=normalize, algo=algo,
    )  # fmt: skip
    tick = time.perf_counter()
    result = driver.train(config, _agent(task, algo, **fields), None, progress=None,
                          seeds=seeds)  # fmt: skip
    seconds = time.perf_counter() - tick
    curve = _returns(result.history)
    final = curve[-1]
    data = minari_format.load(dataset["id"])
    random_return, behaviour = dataset["random_return"], dataset["behaviour_return"]
    return {
        "kind": "offline",
        "algo": algo,
        "dataset": dataset["id"],
        "agent": fields,
        "actor_hidden": list(task.actor_hidden or task.hidden),
        "critic_hidden": list(task.hidden),
        "normalize_observations": normalize,
        "offline_updates": task.offline_updates,
        "seeds": seeds,
        "final_return": _interval(final),
        "score": _interval(data.normalized_score(final)),
        "of_behaviour": None  # a dataset in which no episode ended has no behaviour return
        if behaviour is None
        else _interval([100 * (r - random_return) / (behaviour - random_return) for r in final]),
        "curve": curve,
        "seconds": round(seconds, 1),
    }


def online_runs(task: Task, dataset: dict, seeds: int) -> list[dict]:
    """E2O pre-trained on `dataset` then fine-tuned, and SAC from scratch, the same online
    budget and loop settings (the expert preset's)."""
    from jaxrl.config import resolve
    from jaxrl.run import driver

    base, _, _ = resolve.build_configs(["--preset", task.expert_preset, *task.expert_args])
    online = dict(total_steps=task.online_steps, eval_envs=task.eval_envs,
                  eval_every=task.online_steps // task.online_evals)  # fmt: skip
    e2o = dataclasses.replace(
        base, algo="e2o", dataset=dataset["id"], offline_updates=task.offline_updates,
        offline_eval_every=task.offline_updates // task.offline_evals, **online,
    )  # fmt: skip
    sac = dataclasses.replace(base, **online)
    rows = []
    for label, config, agent in (
        ("e2o", e2o, _agent(task, "e2o")),
        ("sac_scratch", sac, _agent(task, "sac")),
    ):
        tick = time.perf_counter()
        result = driver.train(config, agent, None, progress=None, seeds=seeds)
        seconds = time.perf_counter() - tick
        phases = [row.get("phase", "online") for row in result.history]
        curve = _returns(result.history)
        steps = [int(row["env_steps"]) for row in result.history]
        means = [float(np.mean(c)) for c in curve]
        source = dataset["id"] if label == "e2o" else None
        row = {
            "kind": "online", "algo": label, "dataset": source, "seeds": seeds,
            "phases": phases, "env_steps": steps, "curve": curve,
            "final_return": _interval(curve[-1]), "seconds": round(seconds, 1),
        }  # fmt: skip
        if "offline" in phases:
            row["offline_return"], row["largest_dip"] = largest_dip(phases, means)
        rows.append(row)
    return rows


def latest(path: pathlib.Path) -> list[dict]:
    """The records of one validation file, a rerun's replacing the earlier one of its task,
    kind, quality and algorithm."""
    kept: dict[tuple, dict] = {}
    for line in path.read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            kept[(r["task"], r["kind"], r.get("quality"), r.get("algo"))] = r
    return list(kept.values())


def _ci(interval: dict, spec: str = ",.0f") -> str:
    return f"{interval['mean']:{spec}} [{interval['low']:{spec}}, {interval['high']:{spec}}]"


def section(records: list[dict]) -> list[str]:
    """RESULTS.md's tables for each task: the datasets, each offline algorithm's D4RL score
    and its return as a percentage of the behaviour's, and offline-to-online against SAC."""
    lines = []
    for task in sorted({r["task"] for r in records}):
        mine = [r for r in records if r["task"] == task]
        data = {r["quality"]: r for r in mine if r["kind"] == "dataset"}
        offline = [r for r in mine if r["kind"] == "offline"]
        online = [r for r in mine if r["kind"] == "online"]
        any_run = (offline or online or [{}])[0]
        lines += [
            f"## Offline RL: {mine[0]['env']} (`offline_validate --task {task}`)",
            "",
            f"{any_run.get('seeds', '-')} seeds in one vmapped program per run; D4RL's score "
            "(0 random play, 100 the expert) and the",
            "return as a percentage of the behaviour's (100: as good as the data), means with "
            "95% bootstrap intervals.",
            "",
            "| dataset | episodes | random | behaviour | expert |",
            "| --- | ---: | ---: | ---: | ---: |",
        ]
        for quality, d in data.items():
            lines.append(
                f"| {quality} | {d['episodes']} | {d['random_return']:,.0f} "
                f"| {fmt(d['behaviour_return'], ',.0f', '- (no episode ended)')} "
                f"| {d['ref_max_score']:,.0f} |"
            )
        qualities = [q for q in QUALITIES if q in data]
        lines += ["", "| algorithm | " + " | ".join(qualities) + " |",
                  "| --- |" + " --- |" * len(qualities)]  # fmt: skip
        for algo in dict.fromkeys(r["algo"] for r in offline):
            cells = []
            for quality in qualities:
                run = next(
                    (r for r in offline if (r["algo"], r["quality"]) == (algo, quality)), None
                )
                behaviour = data[quality]["behaviour_return"]
                below = behaviour is not None and behaviour <= data[quality]["random_return"]
                share = " (data below random)" if below else ""
                if run is not None and run["of_behaviour"] is not None and not below:
                    share = f" ({run['of_behaviour']['mean']:,.0f}% of data)"
                cells.append("-" if run is None else _ci(run["score"]) + share)
            lines.append(f"| {algo} | " + " | ".join(cells) + " |")
        if online:
            lines += ["", "| online (medium data) | final return | last offline | largest dip | "
                      "seconds |", "| --- | ---: | ---: | ---: | ---: |"]  # fmt: skip
            for r in online:
                last, dip = fmt(r.get("offline_return"), ",.0f"), fmt(r.get("largest_dip"), ",.0f")
                lines.append(
                    f"| {r['algo']} | {_ci(r['final_return'])} | {last} | {dip} "
                    f"| {r['seconds']:,.0f} |"
                )
        lines.append("")
    return lines


def plot(records: list[dict], folder: pathlib.Path, name: str) -> list[pathlib.Path]:
    """Per task: the offline curves on each dataset (return against updates) and the online
    ones (E2O from its last offline evaluation, SAC from scratch), mean over seeds with its
    min-max spread; the expert's return dotted."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    for task in sorted({r["task"] for r in records}):
        mine = [r for r in records if r["task"] == task]
        data = {r["quality"]: r for r in mine if r["kind"] == "dataset"}
        panels = [q for q in QUALITIES if q in data] + ["online"]
        fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.6))
        for ax, panel in zip(np.atleast_1d(axes), panels, strict=True):
            if panel == "online":
                runs = [r for r in mine if r["kind"] == "online"]
                for r in runs:
                    y = np.array(r["curve"])
                    start = last_offline(r["phases"]) if "offline" in r["phases"] else 0
                    x, y = np.array(r["env_steps"])[start:], y[start:]
                    (line,) = ax.plot(x, y.mean(1), label=r["algo"])
                    ax.fill_between(x, y.min(1), y.max(1), alpha=0.2, color=line.get_color())
                ax.set_xlabel("online env steps")
            else:
                for r in (r for r in mine if r["kind"] == "offline" and r["quality"] == panel):
                    y = np.array(r["curve"])
                    x = np.arange(1, len(y) + 1) * r["offline_updates"] / len(y)
                    (line,) = ax.plot(x, y.mean(1), label=r["algo"])
                    ax.fill_between(x, y.min(1), y.max(1), alpha=0.2, color=line.get_color())
                if data[panel]["behaviour_return"] is not None:
                    ax.axhline(data[panel]["behaviour_return"], color="grey", linestyle="--",
                               linewidth=1, label="behaviour")  # fmt: skip
                ax.set_xlabel(f"offline updates ({panel})")
            expert = next(iter(data.values()))["ref_max_score"] if data else None
            if expert is not None:
                ax.axhline(expert, color="grey", linestyle=":", linewidth=1, label="expert")
            ax.set_ylabel("greedy return")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
        fig.suptitle(f"{mine[0]['env']} (offline_validate --task {task})")
        fig.tight_layout()
        path = folder / f"{name}-{task}.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="pendulum", choices=sorted(TASKS))
    parser.add_argument("--work", required=True, help="folder for the expert run and datasets")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--only", default="", help="offline algorithms, comma-separated")
    parser.add_argument(
        "--qualities", default="", help="datasets to train on, comma-separated (all made)"
    )
    parser.add_argument("--out", help="JSON-lines file to append to")
    parser.add_argument(
        "--online",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the offline-to-online runs (E2O against SAC) after the offline ones",
    )
    args = parser.parse_args(argv)
    algos = [a for a in args.only.split(",") if a] or list(OFFLINE)
    if set(algos) - set(OFFLINE):
        parser.error(f"--only: choose from {', '.join(OFFLINE)}")
    qualities = [q for q in args.qualities.split(",") if q] or list(QUALITIES)
    if set(qualities) - set(QUALITIES):
        parser.error(f"--qualities: choose from {', '.join(QUALITIES)}")
    work = pathlib.Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    os.environ["MINARI_DATASETS_PATH"] = str(work / "datasets")
    from jaxrl.benchmarks.case import append_records, machine

    task = TASKS[args.task]

    def log(line: str) -> None:
        print(line, flush=True)

    def emit(record: dict) -> None:
        record = {"task": args.task, "env": task.env, **record}
        print(json.dumps({k: v for k, v in record.items() if k != "curve"}), flush=True)
        if args.out:
            append_records(args.out, [{**record, "machine": machine()}])

    expert = train_expert(task, work, log)
    datasets = make_datasets(task, args.task, expert, work, log)
    for quality, dataset in datasets.items():
        emit({"kind": "dataset", "quality": quality, "expert": expert["curve"], **dataset})
    for quality in qualities:
        for algo in algos:
            emit({"quality": quality, **offline_run(task, algo, datasets[quality], args.seeds)})
    for record in online_runs(task, datasets["medium"], args.seeds) if args.online else ():
        emit({"quality": "medium", **record})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
