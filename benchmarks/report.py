"""The markdown summary (RESULTS.md) and plots from the suite's JSON records."""

from __future__ import annotations

import json
import os
import pathlib
import re
from collections import defaultdict

import numpy as np

from jaxrl.benchmarks.parity_report import identical_section, parity_section
from jaxrl.benchmarks.tables import fmt, mean_or_none, stopped, system_of


def load(path: pathlib.Path, failed: bool = False) -> list[dict]:
    """Suite records of one file; a case run again replaces its earlier record. Records of
    the stand-alone scripts beside them (`pql_split.py`, `robots.py`, `gpu_kernels.py`: no
    "case", or a "case" but no "system") are theirs to report, and skipped. With `failed`, a
    case that never finished also has its last error record (`identified`), after the rest; a
    case that finished once keeps its finished record whatever failed after it."""
    latest: dict[str, dict] = {}
    failures: dict[str, dict] = {}
    for line in path.read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            if "error" in record and "suite" in record:  # `run.failed_record`
                if failed and (known := identified(record)):
                    failures[record["case"]] = known
            elif "case" in record and "system" in record:
                latest[record["case"]] = record
    return [*latest.values(), *(r for c, r in failures.items() if c not in latest)]


def identified(record: dict) -> dict | None:
    """A failed case's record with the fields of its case and the evaluations it printed
    (`partial_evals`). Records written before failed records kept them have only the case's
    name: its fields come from its suite's case of that name (None where the suite no longer
    has it), its evaluations from the progress lines its error kept."""
    if "system" not in record:
        from jaxrl.benchmarks.case import identity
        from jaxrl.benchmarks.suites import SUITES

        cases = {c.name: c for c in SUITES[record["suite"]]()} if record["suite"] in SUITES else {}
        if record["case"] not in cases:
            return None
        record = {**identity(cases[record["case"]]), **record}
    if "partial_evals" not in record and (partial := partial_evals(record["error"])):
        record = {**record, "partial_evals": partial}
    return record


# A case's evaluation line (`case.run_jaxrl`), and a progress line (`logs`) with an
# evaluation, as the case prefixes it:
#   [case] 8302.9 s: [redq ...]    75,264/100,352 steps | ... | eval    790.17 ± 64.0 | ...
EVALUATION = re.compile(r"^\[case\] [\d.]+ s: evaluation (?P<point>\{.*\})$")
_PROGRESS = re.compile(
    r"^\[case\] (?P<at>[\d.]+) s: .*?(?P<steps>[\d,]+)/[\d,]+ steps \|.*"
    r"\| eval\s+(?P<mean>-?[\d.]+) ± (?P<std>[\d.]+)"
)


def partial_evals(output: str) -> list[dict]:
    """The evaluations a case printed before it was stopped: its `evaluation {json}` lines
    (`case.run_jaxrl`: the mean over seeds, their spread and 95% interval), or, from a case
    of a version that printed none, its progress lines (the mean and the spread over seeds
    only)."""
    lines = output.splitlines()
    points = [json.loads(m["point"]) for m in map(EVALUATION.match, lines) if m]
    if points:
        return points
    return [
        {
            "env_steps": int(m["steps"].replace(",", "")),
            "wall_seconds": float(m["at"]),
            "eval_return": float(m["mean"]),
            "eval_return_std": float(m["std"]),
        }
        for m in map(_PROGRESS.match, lines)
        if m
    ]


SPEED_SYSTEMS = ("speed", "brax-speed")  # an update alone (`benchmarks/speed.py`)


def one_line(record: dict) -> str:
    if "error" in record:
        return "error"
    if record["system"] == "limit":
        return f"limit {record['env_steps_per_second']:,.0f} env-steps/s"
    if record["system"] == "profile":
        compile_s, run_s = record["profile"]["compile"], record["profile"]["run"]
        return (
            f"chunk compiles in {compile_s['chunk']['compile_seconds']:.1f} s, "
            f"runs in {run_s['chunk']:.2f} s"
        )
    if record["system"] in SPEED_SYSTEMS:
        return speed_line(record)
    hit = record["seconds_to_threshold"]
    reached = f"threshold at {hit:.1f} s" if hit is not None else "threshold not reached"
    return f"{reached}, final return {record['final_return']:.1f}"


def speed_line(record: dict) -> str:
    """An update's cost and rate against the device's measured matmul peak in the precision
    it ran (bfloat16 where --matmul-precision bfloat16 or mixed), and the env count its state
    fits."""
    speed = record["speed"]
    config = record.get("config", ())
    dtype = "bfloat16" if "bfloat16" in config or "mixed" in config else "float32"
    peak = record["matmul_peak"][dtype]["flops_per_second"]
    rate = speed["flops_per_second"]
    # Brax's update (brax-speed) has no jaxrl state to size
    estimate = record.get("memory_estimate")
    fits = (
        f"; state and batch fit {estimate['largest_num_envs']:,} envs in 60 GB" if estimate else ""
    )
    kernels = ""
    if speed.get("kernels_per_update"):  # records from before kernels were counted have none
        kernels = (
            f"; {speed['kernels_per_update']:,} kernels, "
            f"{speed['seconds_per_kernel'] * 1e6:,.2f} us each"
        )
        inner = speed.get("heaviest_inner_loop")
        if inner:
            kernels += f" ({inner['kernels_per_trip']:,} per trip of its inner loop)"
    return (
        f"update {speed['flops_per_update'] / 1e9:,.1f} GFLOP in "
        f"{speed['seconds_per_update'] * 1e3:,.1f} ms: {rate / 1e12:.2f} TFLOP/s, "
        f"{rate / peak:.1%} of the {dtype} matmul peak ({peak / 1e12:.1f} TFLOP/s)"
        f"{kernels}{fits}"
    )


def _compile_target(head: str, base: float, seconds: dict[str, float]) -> str:
    """One line of the compile target (<= 0.5x Brax SAC's `base`): each system's ratio, lowest
    first, and how many meet it; `head` is formatted with `base`."""
    ratios = sorted(((k, v / base) for k, v in seconds.items()), key=lambda kv: kv[1])
    met = sum(v <= 0.5 for _, v in ratios)
    listed = ", ".join(f"{k} {v:.2f}" for k, v in ratios)
    return f"{head.format(base)}{listed}; met by {met} of {len(ratios)}."


def targets(records: list[dict]) -> list[str]:
    """The issue's targets, where the records hold both sides (means over seeds)."""
    lines = []
    ip = [r for r in records if r.get("env") == "brax/inverted_pendulum" and "error" not in r]
    by = {}  # one entry per system: means over its seeds (time to threshold: if all reached)
    for name in sorted({system_of(r) for r in ip if r["system"] in ("jaxrl", "brax")}):
        runs = [r for r in ip if system_of(r) == name]
        hits = [r["seconds_to_threshold"] for r in runs]
        by[name] = {
            "system": runs[0]["system"],
            "algo": runs[0]["algo"],
            "seeds": len(runs),
            "seconds_to_threshold": None if None in hits else float(np.mean(hits)),
            "compile_seconds": float(np.mean([r["compile_seconds"] for r in runs])),
            "compile_events": mean_or_none([r.get("compile_total_seconds") for r in runs]),
        }
    brax_sac, brax_ppo = by.get("brax/sac"), by.get("brax/ppo")
    ours = [r for k, r in by.items() if k.startswith("jaxrl/") and r["seconds_to_threshold"]]
    if brax_sac and ours:
        best = min(ours, key=lambda r: r["seconds_to_threshold"])
        if brax_sac["seconds_to_threshold"]:
            ratio = best["seconds_to_threshold"] / brax_sac["seconds_to_threshold"]
            verdict = "met" if ratio <= 0.25 else f"missed by {ratio / 0.25:.1f}x"
            lines.append(
                f"- Best jaxrl ({system_of(best)}) to threshold on brax/inverted_pendulum: "
                f"{best['seconds_to_threshold']:.1f} s vs Brax SAC "
                f"{brax_sac['seconds_to_threshold']:.1f} s = {ratio:.2f} of it "
                f"(target <= 0.25): {verdict}."
            )
        else:
            lines.append("- Brax SAC did not reach the threshold: the 1/4 target has no base.")
    if brax_sac:
        jaxrl_runs = {system_of(r): r for r in by.values() if r["system"] == "jaxrl"}
        lines.append(
            _compile_target(
                "- Compile (to the first finished chunk) against Brax SAC's {:.1f} s, target "
                "<= 0.5: ",
                brax_sac["compile_seconds"],
                {k: r["compile_seconds"] for k, r in jaxrl_runs.items()},
            )
        )
        events = {k: r["compile_events"] for k, r in jaxrl_runs.items()}
        if brax_sac["compile_events"] and events and None not in events.values():
            # The identical suite's clock: the first chunk's run is not in it, and Brax's
            # programs compiled after its first evaluation are.
            lines.append(
                _compile_target(
                    "- Compile by JAX's compile events (tracing, lowering and XLA of every "
                    "program in the process) against Brax SAC's {:.1f} s: ",
                    brax_sac["compile_events"],
                    events,
                )
            )
        for r in records:
            if r.get("system") == "profile" and r["env"] == "brax/inverted_pendulum":
                pieces = r["profile"]["compile"]
                parts = sorted(PIECES, key=lambda k: -pieces[k]["compile_seconds"])
                lines.append(
                    f"  - jaxrl/{r['algo']} compile pieces on their own (profile): "
                    + ", ".join(f"{k} {pieces[k]['compile_seconds']:.1f} s" for k in parts)
                    + f"; the whole chunk {pieces['chunk']['compile_seconds']:.1f} s "
                    f"(+{pieces['chunk']['trace_seconds']:.1f} s trace)."
                )
    lines += throughput_target(records)
    ppo = by.get("jaxrl/ppo")
    if ppo and brax_ppo:
        a, b = ppo["seconds_to_threshold"], brax_ppo["seconds_to_threshold"]
        if a and b:
            lines.append(
                f"- jaxrl PPO to threshold {a:.1f} s vs Brax PPO {b:.1f} s: "
                f"{'met' if a <= b else f'missed by {a / b:.2f}x'}."
            )
        else:
            lines.append(f"- PPO to threshold: jaxrl {fmt(a)} s, Brax {fmt(b)} s.")
    return lines


def throughput_target(records: list[dict]) -> list[str]:
    """On a GPU, jaxrl PPO's training rate at 4096 envs against the simulator limit (target:
    at least 50%), with where a profile says its chunk's time goes."""
    lines = []
    limits = {
        (r["env"], r["num_envs"]): r["env_steps_per_second"]
        for r in records
        if r.get("system") == "limit" and "error" not in r
    }
    for r in records:
        if not (
            r.get("system") == "jaxrl"
            and r["algo"] == "ppo"
            and r["num_envs"] >= 4096
            and r["machine"]["backend"] == "gpu"
            and "error" not in r
        ):
            continue
        limit, sps = limits.get((r["env"], r["num_envs"])), r["env_steps_per_second"]
        if not (limit and sps):
            continue
        fraction = sps / limit
        line = (
            f"- GPU throughput, jaxrl PPO on {r['env']} at {r['num_envs']} envs: "
            f"{fraction:.0%} of the simulator limit (target >= 50%): "
            f"{'met' if fraction >= 0.5 else f'missed by {0.5 - fraction:.0%} of the limit'}."
        )
        for p in records:
            if p.get("system") == "profile" and (p["env"], p["algo"]) == (r["env"], "ppo"):
                run = p["profile"]["run"]
                line += " Per chunk (profile): " + ", ".join(
                    f"{k} {run[k] / run['chunk']:.0%}"
                    for k in ("simulate", "learn", "evaluate", "other")
                )
                line += "."
        lines.append(line)
    return lines


def section(name: str, records: list[dict]) -> list[str]:
    lines = [f"## {name}", ""]
    machines = {json.dumps(r["machine"], sort_keys=True) for r in records if "machine" in r}
    for m in sorted(machines):
        facts = json.loads(m)
        lines.append(
            f"Machine: {facts['cpu']} ({facts['cores']} cores), {facts['backend']} "
            f"{', '.join(facts['devices'])} x{facts['device_count']}; jax {facts['jax']}, "
            f"brax {facts['brax']}, mujoco {facts['mujoco']}."
        )
    lines.append("")
    limits = {
        (r["env"], r["num_envs"]): r["env_steps_per_second"]
        for r in records
        if r.get("system") == "limit" and "error" not in r
    }
    for env in sorted({r["env"] for r in records if "env" in r}):
        runs = [r for r in records if r.get("env") == env and r["system"] in ("jaxrl", "brax")]
        ok = [r for r in runs if "error" not in r]
        peers = [r["seconds_to_threshold"] for r in ok if r["system"] == "brax"]
        best_peer = min([p for p in peers if p], default=None)
        threshold = ok[0]["threshold"] if ok else None
        lines += [
            f"### {env} (threshold {fmt(threshold, ',.0f')})",
            "",
            "| system | envs | seed | to threshold (s) | env steps to it | ratio to best peer "
            "| compile (s) | env-steps/s | of limit | updates/s | final return | peak RSS (MB) |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in sorted(
            ok, key=lambda r: (r["seconds_to_threshold"] is None, r["seconds_to_threshold"] or 0)
        ):
            limit = limits.get((env, r["num_envs"]))
            sps = r["env_steps_per_second"]
            hit = r["seconds_to_threshold"]
            lines.append(
                f"| {system_of(r)} | {r['num_envs']} | {r['seed']} | {fmt(hit)} "
                f"| {fmt(r['steps_to_threshold'], ',d')} "
                f"| {fmt(hit / best_peer if hit and best_peer else None, '.2f')} "
                f"| {fmt(r['compile_seconds'])} | {fmt(sps, ',.0f')} "
                f"| {fmt(sps / limit if sps and limit else None, '.0%')} "
                f"| {fmt(r['updates_per_second'], ',.0f')} | {fmt(r['final_return'])} "
                f"| {fmt(r['peak_rss_mb'], ',.0f')} |"
            )
        for r in runs:
            if "error" in r:
                lines.append(f"| {r['case']} | failed: {r['error'].strip().splitlines()[-1]} |")
        env_limits = sorted((n, v) for (e, n), v in limits.items() if e == env)
        if env_limits:
            lines.append("")
            lines.append(
                "Simulator limit (random actions, one compiled scan): "
                + ", ".join(f"{v:,.0f} env-steps/s at {n} envs" for n, v in env_limits)
                + "."
            )
        lines.append("")
    target_lines = targets(records)
    if target_lines:
        lines += ["### Targets", "", *target_lines, ""]
    lines += profiles(records)
    lines += speeds(records)
    return lines


def speeds(records: list[dict]) -> list[str]:
    """The speed cases (`benchmarks/speed.py`): each algorithm's update against the matmul peak."""
    done = [r for r in records if r.get("system") in SPEED_SYSTEMS and "error" not in r]
    if not done:
        return []
    lines = [
        "### Updates against the hardware",
        "",
        "Speed cases (`benchmarks/speed.py`): one update compiled alone at the run's sizes on "
        "made-up data; its matrix-product FLOPs counted from the jaxpr (scan bodies times their "
        "length), divided by its median seconds, against the device's measured rate on one "
        "large square product in the same precision; and the env count whose state and "
        "learning data (`jax.eval_shape`, XLA's temporaries not counted) fit 60 GB, an 80 GB "
        "card under JAX's default 75% preallocation. Brax's PPO update (`brax-speed`): its own "
        "loss, gradients and optimiser in the epochs and minibatches of its training step.",
        "",
    ]
    for r in sorted(done, key=lambda r: (r["env"], r["algo"], r["system"])):
        who = "Brax's " if r["system"] == "brax-speed" else ""
        lines.append(f"- {who}{r['algo']} on {r['env']} ({r['num_envs']} envs): {speed_line(r)}.")
    return lines + [""] + against_brax_update(done)


def against_brax_update(records: list[dict]) -> list[str]:
    """Each jaxrl update's time over Brax's (a `brax-speed` record at the same task and env
    count, in the same run), with their kernels per update: whether jaxrl's update, or the rest
    of its loop, is what stands between it and Brax's rate."""
    lines = []
    for brax in (r for r in records if r["system"] == "brax-speed"):
        theirs = brax["speed"]
        setting = (brax["env"], brax["num_envs"], brax["algo"])
        for r in records:
            if (
                r["system"] != "speed"
                or (r["env"], r["num_envs"], r["algo"].split("+")[0]) != setting
            ):
                continue
            ours = r["speed"]
            ratio = ours["seconds_per_update"] / theirs["seconds_per_update"]
            kernels = ""
            if ours.get("kernels_per_update") and theirs.get("kernels_per_update"):
                kernels = (
                    f", {ours['kernels_per_update']:,} kernels against "
                    f"{theirs['kernels_per_update']:,}"
                )
            lines.append(
                f"- jaxrl's {r['algo']} update on {r['env']}: {ratio:.2f}x Brax's time "
                f"({ours['seconds_per_update'] * 1e3:,.1f} against "
                f"{theirs['seconds_per_update'] * 1e3:,.1f} ms{kernels})."
            )
    return lines + [""] if lines else []


PIECES = ("init", "env_step", "evaluate", "update")


def profiles(records: list[dict]) -> list[str]:
    """The profile cases: compile and run seconds of each piece of the chunk program."""
    done = [r for r in records if r.get("system") == "profile" and "error" not in r]
    if not done:
        return []
    lines = [
        "### Where the time goes",
        "",
        "Profile cases (`benchmarks/profile.py`), cache off. Compile: XLA seconds of each piece "
        "compiled on its own (init: env reset, agent and buffer init; env step: the training "
        "envs' step with auto-reset; evaluate: reset and episodes of the evaluation envs; "
        "update: one chunk's gradient updates; chunk: the whole program, which holds all but "
        "init, and its Python trace). Run: seconds per chunk and their split: learn (the chunk "
        "minus the same chunk with updates that do nothing), simulate (the chunk's env steps "
        "with random actions, apart), evaluate (apart, trained agent) and other (the rest: "
        "acting, replay, statistics; slightly negative where the pieces apart ran slower).",
        "",
        "| system | env | envs | compile: init | env step | evaluate | update | chunk (+trace) "
        "| run/chunk: simulate | learn | evaluate | other | chunk |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
        "| ---: |",
    ]
    for r in sorted(done, key=lambda r: (r["env"], r["algo"])):
        c, t = r["profile"]["compile"], r["profile"]["run"]
        chunk = t["chunk"]

        def share(k, chunk=chunk, t=t):
            return f"{t[k]:.2f} ({t[k] / chunk:.0%})"

        lines.append(
            f"| jaxrl/{r['algo']} | {r['env']} | {r['num_envs']} "
            + "".join(f"| {c[k]['compile_seconds']:.1f} " for k in PIECES)
            + f"| {c['chunk']['compile_seconds']:.1f} (+{c['chunk']['trace_seconds']:.1f}) "
            + "".join(f"| {share(k)} " for k in ("simulate", "learn", "evaluate", "other"))
            + f"| {chunk:.2f} |"
        )
    return lines + [""]


def plot(name: str, records: list[dict], folder: pathlib.Path) -> list[pathlib.Path]:
    """Eval return against wall-clock and against env steps, one PNG per env: mean over seeds
    with the min-max spread where the seeds share evaluation points."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    runs = [r for r in records if r.get("evals") and "error" not in r]
    stopped_runs = stopped(records)  # what they reached, dashed
    for env in sorted({r["env"] for r in runs + stopped_runs}):
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        groups = defaultdict(list)
        for r in runs:
            if r["env"] == env:
                groups[f"{system_of(r)} ({r['num_envs']} envs)"].append(r)
        for label, group in sorted(groups.items()):
            for ax, key in zip(axes, ("wall_seconds", "env_steps"), strict=True):
                xs = [np.array([e[key] for e in r["evals"]], float) for r in group]
                ys = [np.array([e["eval_return"] for e in r["evals"]], float) for r in group]
                n = min(len(x) for x in xs)
                x = np.mean([x[:n] for x in xs], axis=0)
                y = np.array([y[:n] for y in ys])
                (line,) = ax.plot(x, y.mean(0), label=label)
                if len(group) > 1:
                    ax.fill_between(x, y.min(0), y.max(0), alpha=0.2, color=line.get_color())
        for r in [r for r in stopped_runs if r["env"] == env]:
            label = f"{system_of(r)} ({r['num_envs']} envs, stopped)"
            for ax, key in zip(axes, ("wall_seconds", "env_steps"), strict=True):
                xs = [e[key] for e in r["partial_evals"]]
                ax.plot(xs, [e["eval_return"] for e in r["partial_evals"]], "--", label=label)
        threshold = next(r["threshold"] for r in runs + stopped_runs if r["env"] == env)
        for ax, xlabel in zip(
            axes, ("wall-clock seconds (compile included)", "env steps"), strict=True
        ):
            ax.axhline(threshold, color="grey", linestyle=":", linewidth=1)
            ax.set_xlabel(xlabel)
            ax.set_ylabel("eval return")
            ax.grid(alpha=0.3)
        axes[1].set_xscale("symlog", linthresh=1000)  # runs differ by 100x in env steps
        axes[1].set_xlim(left=0)
        axes[0].legend(fontsize=8)
        fig.suptitle(f"{env} ({name})")
        fig.tight_layout()
        path = folder / f"{name}-{env.replace('/', '-')}.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path)
    return written


def writer_for(stem: str):
    """The section writer of a records file named `stem` (`<suite>-<backend>`)."""
    if stem.startswith("identical"):
        return identical_section
    if stem.startswith(("door", "gpu-door")):
        from jaxrl.benchmarks import door_speed

        return door_speed.section
    if stem.startswith("ppo_choices"):
        from jaxrl.benchmarks import ppo_choices

        return ppo_choices.section
    if stem.startswith("dmc_algos"):
        from jaxrl.benchmarks import dmc_algos

        return dmc_algos.section
    return parity_section if "parity" in stem else section


def read(path: pathlib.Path):
    """(its section writer, its records) of a records file: only a writer that says what a
    failed case had reached (`shows_failed`) gets the failed cases too."""
    writer = writer_for(path.stem)
    return writer, load(path, failed=getattr(writer, "shows_failed", False))


def write(results: pathlib.Path, summary: pathlib.Path | None = None) -> pathlib.Path:
    """The markdown summary of every records file in the folder `results`, with its plots
    written there too; the summary goes to `summary` (default: RESULTS.md in that folder; the
    repository keeps it beside the folder, benchmarks/RESULTS.md over benchmarks/results/)."""
    summary = summary or results / "RESULTS.md"
    where = pathlib.Path(os.path.relpath(results, summary.parent)).as_posix()
    records_in = "this folder" if where == "." else f"`{where}/`"
    lines = [
        "# Benchmark results",
        "",
        f"Generated by `jaxrl bench` from the JSON records in {records_in}; every case ran in its",
        "own process. Time to threshold is wall-clock from the start of training, compilation",
        "included; compile is the time to the first finished chunk (Brax: its first evaluation",
        "after training began); env-steps/s is the steady rate after it, evaluations included",
        "and compilation between the points left out (Brax compiles some programs late);",
        "`of limit` divides it by the simulator's random-action rate at the same env count.",
        "",
    ]
    # Speed at identical settings first: the implementation's comparison, apart from the
    # tuned presets' tables.
    paths = sorted(results.glob("*.jsonl"), key=lambda p: (not p.stem.startswith("identical"), p))
    for path in paths:
        if path.stem.startswith("offline-validate"):  # records of their own shape
            from jaxrl.benchmarks import offline_validate

            validated = offline_validate.latest(path)
            lines += offline_validate.section(validated)
            for png in offline_validate.plot(validated, results, path.stem):
                link = pathlib.Path(os.path.relpath(png, summary.parent)).as_posix()
                lines += [f"![{png.stem}]({link})", ""]
            continue
        writer, records = read(path)
        if not records:
            continue
        lines += writer(path.stem, records)
        if writer is identical_section or path.stem.startswith(("door", "ppo_choices")):
            continue  # tables only: speed, or final returns of one update
        for png in plot(path.stem, records, results):
            link = pathlib.Path(os.path.relpath(png, summary.parent)).as_posix()
            lines += [f"![{png.stem}]({link})", ""]
    summary.parent.mkdir(parents=True, exist_ok=True)
    summary.write_text("\n".join(lines))
    return summary
