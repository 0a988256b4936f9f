"""`jaxrl scale`'s files (issue 40): `write_report` writes a report as scale.json and draws
scale.png (`draw`: D_J against the UTD ratio, and the data-compute frontier with its iso-budget
lines), and of a grid with a width axis, `draw_widths` across widths and a figure per width.
matplotlib, and numpy through `scale_fit`'s laws.
"""

from __future__ import annotations

import json
import pathlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxrl.experiments import scale_fit as sf
from jaxrl.files import write_atomically


def write_report(
    report: dict, folder: pathlib.Path, name: str = "scale"
) -> tuple[pathlib.Path, ...]:
    """NAME.json (the report without its in-memory laws) and NAME.png, written atomically; of a
    grid with a width axis, NAME.png compares the widths and NAME-width=W.png is each width's
    own figure."""
    path = folder / f"{name}.json"
    write_atomically(path, json.dumps(_public(report), indent=2, default=_json_default) + "\n")
    figure = folder / f"{name}.png"
    if "by_width" not in report:
        draw(report, figure)
        return path, figure
    draw_widths(report, figure)
    figures = [figure]
    for width, sub in report["by_width"].items():
        figures.append(folder / f"{name}-width={width}.png")
        draw({**sub, "title": f"{report.get('title', '')}, critic width {width}"}, figures[-1])
    return (path, *figures)


def _public(value: Any) -> Any:
    """The report without its in-memory laws (keys starting with _), at every level."""
    if isinstance(value, dict):
        return {k: _public(v) for k, v in value.items() if not str(k).startswith("_")}
    return value


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON")


def iso_deltas(laws: sf.ScalingLaws, sigmas: Sequence[float]) -> list[tuple[float, float]]:
    """(sigma, delta) for each sigma where the frontier's slope gives a positive delta: the
    cost of an env step for which that sigma is the budget-optimal one (C'(sigma) = -delta
    D'(sigma)), so each iso-budget line touches the frontier at one of the grid's sigmas."""
    out = []
    for s in sigmas:
        h = 1e-4 * s
        dc = (laws.compute(s + h) - laws.compute(s - h)) / (2 * h)
        dd = (sf.predict_data(laws.data, s + h) - sf.predict_data(laws.data, s - h)) / (2 * h)
        if dd < 0 and dc > 0:
            out.append((float(s), float(-dc / dd)))
    return out


def draw(report: dict, out: pathlib.Path) -> None:
    """Two panels: D_J against sigma (the runs, each sigma's best, the fitted law and its
    bootstrap band) and the data-compute frontier (the fitted curve, the runs' points, the
    iso-budget lines C + delta D = const through the grid's sigmas, the predictions)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in report["runs"] if r["env_steps"] is not None]
    laws = report.get("_laws")
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    sigmas = sorted({r["utd"] for r in report["runs"]}) or [1.0]
    colors = {s: f"C{i % 10}" for i, s in enumerate(sigmas)}
    for r in rows:
        left.scatter(r["utd"], r["env_steps"], s=18, color="0.6", zorder=2)
        right.scatter(r["env_steps"], r["compute"], s=18, color=colors[r["utd"]], alpha=0.5)
    for b in report["best"]:
        label = f"σ={b['sigma']:g}: B={b['batch_size']:g}, lr={b['lr']:.2g}"
        left.scatter(b["sigma"], b["data"], s=50, color=colors[b["sigma"]], label=label, zorder=3)
        compute = next(
            r["compute"]
            for r in rows
            if (r["utd"], r["batch_size"], r["lr"])
            == tuple(b[k] for k in ("sigma", "batch_size", "lr"))
        )
        right.scatter(b["data"], compute, s=60, color=colors[b["sigma"]], edgecolor="k", zorder=3)
    if laws is not None:
        grid = np.geomspace(min(sigmas) / 2, max(sigmas) * 2, 200)
        data, compute = sf.frontier(laws, grid)
        left.plot(grid, data, "k-", label=_law_label(laws.data))
        boot = report.get("_bootstrap")
        if boot is not None and boot.samples["alpha"].size:
            curves = np.array(
                [
                    sf.predict_data(sf.DataLaw(d, b, a), grid)
                    for d, b, a in zip(
                        boot.samples["d_min"],
                        boot.samples["beta"],
                        boot.samples["alpha"],
                        strict=True,
                    )
                ]
            )
            low, high = np.percentile(curves, [2.5, 97.5], axis=0)
            left.fill_between(
                grid, low, high, color="k", alpha=0.12, linewidth=0, label="95% bootstrap"
            )
        # D_min where it is on the scale of the runs: a fit that drives it to about 0 (1e-6)
        # would stretch the log axis over twelve decades and flatten every point on it.
        if laws.data.d_min >= 0.01 * min(data):
            left.axhline(laws.data.d_min, color="k", ls=":", lw=1)
        right.plot(data, compute, "k-", label="fitted frontier")
        # The axes hold the frontier and every run's point (a run's batch, not the law's, sets
        # its FLOPs, so points may lie far from the fitted curve).
        seen_data = [*data, *(r["env_steps"] for r in rows)]
        seen_compute = [*compute, *(r["compute"] for r in rows)]
        x = np.geomspace(min(seen_data) / 1.5, max(seen_data) * 1.5, 200)
        for s, delta in iso_deltas(laws, sigmas):
            level = float(sf.budget(laws, s, delta))
            y = level - delta * x
            keep = y > 0
            right.plot(
                x[keep],
                y[keep],
                color=colors[s],
                ls="--",
                lw=0.8,
                label=f"δ={delta:.3g} (σ*={s:g})",
            )
        for p in report.get("predictions", []):
            if "error" not in p:
                right.scatter(
                    p["env_steps"],
                    p["compute"],
                    marker="*",
                    s=150,
                    color="gold",
                    edgecolor="k",
                    zorder=4,
                )
        right.set_ylim(min(seen_compute) / 2, max(seen_compute) * 2)
        right.set_xlim(x[0], x[-1])
    left.set(
        xscale="log",
        yscale="log",
        xlabel="UTD ratio σ",
        ylabel=f"env steps to J={report['target']:g}",
    )
    right.set(
        xscale="log",
        yscale="log",
        xlabel="data D_J (env steps)",
        ylabel=f"compute C_J ({report['compute_unit']})",
    )
    _finish_figure(fig, left, right, sigmas, [f"{s:g}" for s in sigmas], report, out)


def _finish_figure(fig, left, right, ticks, labels, report: dict, out: pathlib.Path) -> None:
    """The end both scale figures share: the left panel's x ticks at `ticks` and no labelled
    minor ticks on either panel (they overlapped on log axes), grids, legends, the report's
    title; saved as PNG and closed."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    left.set_xticks(ticks, labels)
    for ax in (left, right):
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.grid(alpha=0.3, which="both")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.suptitle(report.get("title", ""))
    fig.tight_layout()
    try:
        fig.savefig(out, dpi=100, format="png")
    finally:
        plt.close(fig)


def draw_widths(report: dict, out: pathlib.Path) -> None:
    """Two panels across critic widths: D_J at the best learning rate against the batch size,
    a line per (width, UTD ratio) (TD overfitting: small critics' lines rise at large batches);
    and each width's fitted data-compute frontier (FLOPs) with its best runs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    styles = ("-", "--", ":", "-.")
    sigmas = sorted({r["utd"] for r in report["runs"]})
    for i, w in enumerate(report["batch_by_width"]):
        color = f"C{i % 10}"
        for s in w["utd"]:
            points = sorted((b, d) for b, d in s["data"].items() if d is not None)
            if points:
                style = styles[sigmas.index(s["utd"]) % len(styles)]
                left.plot(*zip(*points, strict=True), style, marker="o", color=color,
                          label=f"width {w['width']}, σ={s['utd']:g}")  # fmt: skip
        sub = report["by_width"][str(w["width"])]
        laws = sub.get("_laws")
        if laws is not None:
            grid = np.geomspace(min(sigmas) / 2, max(sigmas) * 2, 200)
            data, compute = sf.frontier(laws, grid)
            right.plot(
                data, compute, color=color, label=f"width {w['width']} (N={laws.model_size:,.0f})"
            )
        for b in sub["best"]:
            row = next(
                r
                for r in sub["runs"]
                if (r["utd"], r["batch_size"], r["lr"]) == (b["sigma"], b["batch_size"], b["lr"])
            )
            right.scatter(row["env_steps"], row["compute"], color=color, edgecolor="k", zorder=3)
    left.set(xscale="log", yscale="log", xlabel="batch size",
             ylabel=f"env steps to J={report['target']:g} (best lr)")  # fmt: skip
    right.set(xscale="log", yscale="log", xlabel="data D_J (env steps)",
              ylabel=f"compute C_J ({report['compute_unit']})")  # fmt: skip
    batches = sorted({r["batch_size"] for r in report["runs"]})
    _finish_figure(fig, left, right, batches, [str(b) for b in batches], report, out)


def _law_label(law: sf.DataLaw) -> str:
    return f"D = {law.d_min:.3g} + ({law.beta:.3g}/σ)^{law.alpha:.2f}"
