"""`jaxrl train --help` is readable: flags in sections (run, env, collection, on-policy,
evaluation, normalisation, devices, the algorithm's own), every run field in exactly one, each
described by its docstring's whole first sentence, enumerated values named, no {None}|STR;
and docs/FLAGS.md is what `python -m jaxrl.config.flagdoc` writes now."""

import pathlib
import re
from dataclasses import fields as fields_of

import pytest

from jaxrl import cli
from jaxrl.config import flagdoc, options, resolve, train

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _help(capsys, monkeypatch, *argv):
    monkeypatch.setenv("COLUMNS", "120")  # one column of sections (tyro puts more side by side)
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", *argv, "--help"])
    assert exit_info.value.code == 0
    return capsys.readouterr().out


def _entry(out, flag):
    """The help entry of `flag` (its metavar and description), its wrapped lines joined."""
    lines = [line.strip("│ ") for line in out.splitlines()]
    start = next(i for i, line in enumerate(lines) if line.startswith(flag + " "))
    end = next(
        i
        for i in range(start + 1, len(lines))
        if not lines[i] or lines[i].startswith(("-", "╰", "─"))
    )
    return " ".join(lines[start:end])


def test_help_groups_the_flags_by_section(capsys, monkeypatch):
    out = _help(capsys, monkeypatch)
    names = ["run", "env", "collection", "on-policy", "evaluation", "normalisation", "devices"]
    titles = [f"{name} options" for name in [*names, "sac"]]
    # A section's title is a line of its own (in a box on a terminal, plain in a pipe).
    starts = [re.search(rf"^\W*{title}\W*$", out, re.M) for title in titles]
    assert all(starts), out
    positions = [match.start() for match in starts]
    assert positions == sorted(positions)
    bounds = zip(positions, [*positions[1:], None], strict=True)
    sections = dict(zip(titles, [out[i:j] for i, j in bounds], strict=True))
    expected = {
        "run": ("--out ", "--seed ", "--seeds ", "--resume ", "--tensorboard", "--vmap "),
        "env": ("--env ", "--episode-length ", "--randomize ", "--env-option ", "--import "),
        "collection": ("--steps ", "--num-envs ", "--batch-size ", "--buffer-size ", "--gamma "),
        "on-policy": ("--unroll-length ", "--reset-every "),
        "evaluation": ("--eval-every ", "--eval-envs ", "--randomize-eval"),
        "normalisation": ("--normalize-observations ", "--obs-clip ", "--renormalize-rollout"),
        "devices": ("--devices ", "--split-every ", "--coordinator "),
    }
    for name, flags in expected.items():
        for flag in flags:  # the section whose entry starts with the flag (not one naming it)
            entry = re.compile(rf"^[│ ]*{re.escape(flag.strip())}[ ,]", re.M)
            where = [title for title, text in sections.items() if entry.search(text)]
            assert where == [f"{name} options"], (flag, where)
    assert "--kernel-init " in sections["sac options"]
    assert "SAC's own flags" in sections["sac options"]
    assert re.search(r"^\W*ppo options\W*$", _help(capsys, monkeypatch, "--algo", "ppo"), re.M)


def test_every_run_field_is_in_exactly_one_section():
    """Each field of TrainOptions and TrainConfig is in one section of SECTIONS, the one place
    that maps them: a field added without a section fails here (and stops `jaxrl train`)."""
    named = [name for section in train.SECTIONS.values() for name in section.fields]
    fields = [f.name for cls in (options.TrainOptions, train.TrainConfig) for f in fields_of(cls)]
    assert sorted(named) == sorted(fields)
    assert len(set(named)) == len(named)
    members = train.section_members()
    assert list(members) == list(train.SECTIONS)
    for name, section in train.SECTIONS.items():
        assert [field.name for _, field in members[name]] == list(section.fields)


def test_a_field_without_a_section_is_refused(monkeypatch):
    sections = dict(train.SECTIONS)
    run = sections["run"]
    sections["run"] = run._replace(fields=tuple(f for f in run.fields if f != "quiet"))
    monkeypatch.setattr(train, "SECTIONS", sections)
    with pytest.raises(RuntimeError, match=r"in none \['quiet'\]"):
        train.section_members()
    sections["env"] = sections["env"]._replace(fields=(*sections["env"].fields, "seed", "nope"))
    with pytest.raises(RuntimeError, match=r"two sections \['seed'\].*no field \['nope'\]"):
        train.section_members()


def test_flags_keep_their_flat_names():
    """Sections group the flags; a field's flag is its own name, with no section prefix."""
    train_config, _, _ = resolve.build_configs(
        ["--batch-size", "64", "--eval-envs", "4", "--obs-clip", "5", "--devices", "0"]
    )
    assert (train_config.batch_size, train_config.eval_envs, train_config.obs_clip) == (64, 4, 5)


def test_help_gives_each_whole_first_sentence(capsys, monkeypatch):
    out = _help(capsys, monkeypatch)
    assert (
        "stop the run (checkpoints and metrics before it kept), or roll back to the newest "
        "checkpoint and go on with a fresh key. (default: stop)" in _entry(out, "--on-nan")
    )
    assert (
        '"lecun_uniform" (Brax\'s networks: a uniform of the same variance). '
        "(default: lecun_normal)" in _entry(out, "--kernel-init")
    )
    assert "(repeatable; the product of all, times --seeds). (repeatable)" in _entry(out, "--vmap")
    # e.g. does not end a sentence; the second sentence stays in docs/FLAGS.md.
    assert "e.g. brax/ant or classic/pendulum" in _entry(out, "--env")
    assert "Rounded up so that every evaluation chunk" not in out
    for flag in ("--on-nan", "--kernel-init", "--vmap", "--autoreset", "--truncation"):
        description = _entry(out, flag).split("(default:")[0].split("(repeatable)")[0]
        assert description.rstrip().endswith((".", ")")), (flag, description)


def test_first_sentence():
    text = "Environment, e.g. brax/ant\nor classic. Second sentence.\n\nMore."
    assert resolve.first_sentence(text) == "Environment, e.g. brax/ant or classic."
    assert resolve.first_sentence("No stop at all\nacross lines") == "No stop at all across lines"
    assert resolve.first_sentence("Register envs. Then more.") == "Register envs."


def test_help_names_the_choices(capsys, monkeypatch):
    out = _help(capsys, monkeypatch)
    assert "--randomize {playground,mass,friction}[,...]" in out
    assert "--replay-obs-dtype {float32,bfloat16,float16}" in out
    assert "--autoreset {random,first}" in out
    assert "--warmup-actions {uniform,policy}" in out
    assert "--truncation {bootstrap,mask}" in out
    assert "--temperature-loss {log_alpha,alpha}" in out
    assert "--kernel-init {lecun_normal,lecun_uniform}" in out
    assert "--actor-q {min,mean}" in out
    assert "--actor-q {min,mean,first}" in _help(capsys, monkeypatch, "--algo", "td3")
    ppo = _help(capsys, monkeypatch, "--algo", "ppo")
    assert "--activation {relu,swish}" in ppo and "--lr-schedule {constant,linear}" in ppo


def test_help_has_no_none_clutter(capsys, monkeypatch):
    out = _help(capsys, monkeypatch)
    assert "{None}|" not in out
    assert _entry(out, "--out").startswith("--out STR ")
    assert _entry(out, "--episode-length").startswith("--episode-length INT ")


def test_bad_choice_names_the_allowed_values(capsys):
    assert cli.main(["train", "--autoreset", "bogus"]) == 2
    assert "autoreset must be one of random, first, got 'bogus'" in capsys.readouterr().err


def test_flag_reference_is_current():
    committed = (ROOT / "docs" / "FLAGS.md").read_text()
    assert committed == flagdoc.render(), f"docs/FLAGS.md is stale; run: {flagdoc.COMMAND}"
