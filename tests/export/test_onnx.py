"""`jaxrl export` and `Policy.export_onnx`: each algorithm's greedy policy as an ONNX model, run
in ONNX Runtime against `load_policy` and against numpy's own normalise -> MLP -> squash; jaxrl
runs, policy files and checkpoints written by Brax's own `ppo.train` and `sac.train`; the file
run where JAX cannot be imported; bad input refused by name with nothing written."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import onnx
import onnxruntime as ort
import pytest

from jaxrl import agents, cli, envs, normalization
from jaxrl.config import TrainConfig
from jaxrl.export import policy as export
from jaxrl.export.graph import ExportError
from jaxrl.loops.base import init_agent, make_policy
from jaxrl.observations import ObservationView
from jaxrl.run import driver, runs
from tests import brax_peer, tiny

OBS, A = 5, 2
TOLERANCE = 1e-5  # absolute, float32 (the issue's)


def _perturbed(tree, key, spread=0.3):
    """Every float leaf moved by a random amount, so no statistic or scale sits at its
    initial 0 or 1 (a graph that skips one then differs)."""
    leaves, structure = jax.tree.flatten(tree)
    keys = jax.random.split(key, len(leaves))
    moved = [
        x + spread * jax.random.uniform(k, x.shape, x.dtype, 0.2, 1.0)
        if jnp.issubdtype(x.dtype, jnp.floating)
        else x
        for x, k in zip(leaves, keys, strict=True)
    ]
    return jax.tree.unflatten(structure, moved)


def _policy(algo: str, normalize: bool = True, **agent_changes) -> runs.Policy:
    """`algo`'s policy with its preset-free default networks, randomly initialised, and
    observation statistics far from the identity."""
    spec = agents.get(algo)
    agent_config = spec.config_cls(**agent_changes)
    agent = spec.make(agent_config)
    config = TrainConfig(
        env="classic/pendulum", algo=algo, normalize_observations=normalize, obs_clip=4.0
    )
    state = init_agent(agent, jax.random.PRNGKey(1), ObservationView(None, None, OBS, None), A)
    if hasattr(state, "actor_stats"):  # CrossQ's BatchRenorm: running statistics, scales
        state = state.replace(
            actor_stats=_perturbed(state.actor_stats, jax.random.PRNGKey(2)),
            actor=state.actor.replace(
                params=_perturbed(state.actor.params, jax.random.PRNGKey(3), 0.5)
            ),
        )
    stats = normalization.RunningStats(
        jnp.linspace(-1.0, 2.0, OBS), jnp.linspace(0.3, 4.0, OBS), jnp.asarray(50.0)
    )
    apply = jax.jit(make_policy(config, agent))
    return runs.Policy(config, agent_config, state, stats, 1234, apply, None, (OBS, None, A))


def _observations(n: int = 64) -> np.ndarray:
    """Observations on both sides of the normaliser's clip."""
    return np.random.RandomState(0).randn(n, OBS).astype(np.float32) * 6


def _run(model: onnx.ModelProto | str | pathlib.Path, obs: np.ndarray, name: str = "obs"):
    source = model.SerializeToString() if isinstance(model, onnx.ModelProto) else str(model)
    session = ort.InferenceSession(source, providers=["CPUExecutionProvider"])
    return session.run(["actions"], {name: obs})[0]


@pytest.mark.parametrize("algo", sorted(agents.ALGORITHMS))
def test_every_algorithm_s_graph_is_its_greedy_policy(algo):
    policy = _policy(algo)
    model = export.policy_model(policy)
    for obs in (_observations(), _observations(1), _observations(33)):  # the batch is dynamic
        np.testing.assert_allclose(_run(model, obs), np.asarray(policy(obs)), atol=TOLERANCE)
    assert [i.name for i in model.graph.input] == ["obs"]
    assert [o.name for o in model.graph.output] == ["actions"]
    shape = model.graph.output[0].type.tensor_type.shape.dim
    assert shape[0].dim_param == "batch" and shape[1].dim_value == A
    meta = {p.key: p.value for p in model.metadata_props}
    assert meta["algorithm"] == algo and meta["env"] == "classic/pendulum"
    assert (meta["observation_size"], meta["action_size"], meta["env_steps"]) == ("5", "2", "1234")
    assert model.opset_import[0].version == 11


def test_a_dict_observation_run_exports_the_entry_its_actor_reads(tmp_path):
    """A run on dict observations with an asymmetric critic: the model's one input is the
    actor's entry, named by it; the critic's entry is not an input. Its policy file reads
    the same entry back."""
    spec = agents.get("sac")
    agent = spec.make(spec.config_cls())
    config = TrainConfig(
        env="classic/pendulum_privileged", algo="sac", normalize_observations=True,
        actor_obs="state", critic_obs="privileged_state",
    )  # fmt: skip
    view = ObservationView(None, None, OBS, OBS + 3)
    state = init_agent(agent, jax.random.PRNGKey(1), view, A)
    stats = normalization.init(view.sizes)
    stats = jax.tree.map(lambda x: x + 0.5, stats)
    apply = jax.jit(make_policy(config, agent))
    policy = runs.Policy(config, spec.config_cls(), state, stats, 7, apply, None, (OBS, OBS + 3, A))
    obs = _observations()
    privileged = np.random.RandomState(1).randn(len(obs), OBS + 3).astype(np.float32)
    want = np.asarray(policy({"state": obs, "privileged_state": privileged}))
    model = export.policy_model(policy)
    assert [i.name for i in model.graph.input] == ["state"]
    np.testing.assert_allclose(_run(model, obs, "state"), want, atol=TOLERANCE)
    loaded = runs.load_policy(policy.save(tmp_path / "dict.policy"))
    np.testing.assert_array_equal(np.asarray(loaded({"state": obs})), want)


def _dense(x, layer):
    return x @ np.asarray(layer["kernel"]) + np.asarray(layer["bias"])


def _normalised(obs, clip=4.0):
    mean, var = np.linspace(-1.0, 2.0, OBS), np.linspace(0.3, 4.0, OBS)
    return np.clip((obs - mean) / np.sqrt(var + 1e-8), -clip, clip)


def test_a_sac_graph_is_numpy_s_normalise_mlp_and_tanh():
    """Independent of jaxrl's own policy: normalised and clipped observations, two ReLU
    layers, the mean half of the head, tanh."""
    policy = _policy("sac")
    layers = policy.agent_state.actor.params["params"]["MLP_0"]
    x = _normalised(_observations())
    for name in ("Dense_0", "Dense_1"):
        x = np.maximum(_dense(x, layers[name]), 0.0)
    want = np.tanh(_dense(x, layers["Dense_2"])[:, :A])
    np.testing.assert_allclose(
        _run(export.policy_model(policy), _observations()), want, atol=TOLERANCE
    )


def test_a_crossq_graph_normalises_with_the_running_statistics():
    """CrossQ's actor in its evaluation mode: every BatchRenorm with its running mean and
    variance (epsilon 1e-3), never the batch's own."""
    policy = _policy("crossq")
    params = policy.agent_state.actor.params["BRNMLP_0"]
    stats = policy.agent_state.actor_stats["BRNMLP_0"]

    def renorm(x, i):
        p, s = params[f"BatchRenorm_{i}"], stats[f"BatchRenorm_{i}"]
        z = (x - np.asarray(s["mean"])) / np.sqrt(np.asarray(s["var"]) + 1e-3)
        return z * np.asarray(p["scale"]) + np.asarray(p["bias"])

    x = renorm(_normalised(_observations()), 0)
    for i in (0, 1):
        x = np.maximum(renorm(_dense(x, params[f"Dense_{i}"]), i + 1), 0.0)
    want = np.tanh(_dense(x, params["Dense_2"])[:, :A])
    np.testing.assert_allclose(
        _run(export.policy_model(policy), _observations()), want, atol=TOLERANCE
    )


def test_a_td3_graph_clips_its_tanh_actions():
    policy = _policy("td3", normalize=False)
    layers = policy.agent_state.actor.params["params"]["MLP_0"]
    x = _observations()
    for name in ("Dense_0", "Dense_1"):
        x = np.maximum(_dense(x, layers[name]), 0.0)
    want = np.tanh(_dense(x, layers["Dense_2"]))
    np.testing.assert_allclose(
        _run(export.policy_model(policy), _observations()), want, atol=TOLERANCE
    )


@pytest.mark.parametrize("opset", [13, 17, 21])
def test_newer_opsets_compute_the_same(opset):
    policy = _policy("fast_sac")  # LayerNorm (ReduceSum's axes moved at 13), SiLU
    model = export.policy_model(policy, opset)
    assert model.opset_import[0].version == opset
    np.testing.assert_allclose(
        _run(model, _observations()), np.asarray(policy(_observations())), atol=TOLERANCE
    )


def test_a_mixed_precision_policy_exports_with_float32_products():
    policy = _policy("sac", matmul_precision="mixed")
    model = export.policy_model(policy)
    meta = {p.key: p.value for p in model.metadata_props}
    assert meta["products"] == "float32 (trained with matmul_precision mixed)"
    reference = _policy("sac")  # the same parameters at float32
    np.testing.assert_allclose(
        _run(model, _observations()), np.asarray(reference(_observations())), atol=TOLERANCE
    )


@pytest.mark.parametrize("algo", sorted(agents.ALGORITHMS))
def test_a_policy_file_holds_what_the_greedy_action_reads(algo, tmp_path):
    """Policy.save keeps every array the action depends on, found independently by moving
    each array of the agent state and watching the action (issue 72: a SAC file was 3/4
    critic); it keeps no critic or target, and the file loads to the same actions."""
    from flax import serialization

    policy = _policy(algo)
    path = policy.save(tmp_path / f"{algo}.policy")
    kept = serialization.msgpack_restore(path.read_bytes())["agent_state"]
    obs = jnp.asarray(_observations())
    base = np.asarray(policy(obs))
    state = runs._without_optimisers(policy.agent_state)
    leaves, structure = jax.tree_util.tree_flatten_with_path(state)
    moves = 0
    for i, (where, leaf) in enumerate(leaves):
        if not jnp.issubdtype(leaf.dtype, jnp.floating):
            continue
        moved = [x for _, x in leaves]
        moved[i] = leaf + 0.5 * jax.random.normal(jax.random.PRNGKey(i), leaf.shape, leaf.dtype)
        acted = policy._apply(jax.tree_util.tree_unflatten(structure, moved), policy.obs_stats, obs)
        if not np.allclose(np.asarray(acted), base, atol=1e-6):
            moves += 1
            assert jax.tree_util.keystr(where) in kept, f"{jax.tree_util.keystr(where)} left out"
    assert moves > 0
    assert all(k.startswith((".actor.params", ".actor_stats", ".params['policy']")) for k in kept)
    total = sum(x.size for _, x in leaves)
    assert sum(np.size(v) for v in kept.values()) < 0.75 * total
    np.testing.assert_array_equal(np.asarray(runs.load_policy(path)(obs)), base)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A tiny SAC run on the pendulum, and a run of two seeds."""
    folder = tmp_path_factory.mktemp("runs")
    driver.train(tiny.off_policy(), tiny.SAC, folder / "sac", checkpoint_every=1, progress=None)
    driver.train(tiny.off_policy(), tiny.SAC, folder / "seeds", seeds="0,1", progress=None)
    return folder


def _real_observations(n: int = 16) -> np.ndarray:
    env = envs.make("classic/pendulum")
    states = jax.vmap(env.reset)(jax.random.split(jax.random.PRNGKey(5), n))
    return np.asarray(states.obs, np.float32)


def _cli(capsys, *argv):
    code = cli.main(["export", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _ok(capsys, *argv) -> str:
    """The printed line of an export that must succeed."""
    code, printed, err = _cli(capsys, *argv)
    assert code == 0, err
    return printed


def test_jaxrl_export_writes_a_run_s_policy(run_dir, tmp_path, capsys):
    out = tmp_path / "policy.onnx"
    printed = _ok(capsys, str(run_dir / "sac"), "--out", str(out))
    assert f"wrote {out}" in printed and "obs [batch, 3] -> actions [batch, 1]" in printed
    policy = runs.load_policy(run_dir / "sac")
    for obs in (_real_observations(), np.random.RandomState(1).randn(8, 3).astype(np.float32)):
        np.testing.assert_allclose(_run(out, obs), np.asarray(policy(obs)), atol=TOLERANCE)
    meta = {p.key: p.value for p in onnx.load(out).metadata_props}
    assert meta["env_steps"] == str(policy.env_steps) == "256"


def test_a_checkpoint_a_member_and_a_policy_file_are_exported(run_dir, tmp_path, capsys):
    out = tmp_path / "p.onnx"
    obs = _real_observations()
    printed = _ok(
        capsys, str(run_dir / "sac"), "--out", str(out), "--checkpoint-step", "128", "--json"
    )
    assert json.loads(printed)["env_steps"] == "128"
    np.testing.assert_allclose(
        _run(out, obs), np.asarray(runs.load_policy(run_dir / "sac", 128)(obs)), atol=TOLERANCE
    )
    for member in (0, 1):
        _ok(capsys, str(run_dir / "seeds"), "--out", str(out), "--member", str(member))
        want = runs.load_policy(run_dir / "seeds", member=member)(obs)
        np.testing.assert_allclose(_run(out, obs), np.asarray(want), atol=TOLERANCE)
    saved = runs.load_policy(run_dir / "sac").save(tmp_path / "sac.policy")
    _ok(capsys, str(saved), "--out", str(out))
    np.testing.assert_allclose(
        _run(out, obs), np.asarray(runs.load_policy(saved)(obs)), atol=TOLERANCE
    )
    # The Python door
    path = runs.load_policy(saved).export_onnx(tmp_path / "api.onnx")
    np.testing.assert_allclose(_run(path, obs), _run(out, obs), atol=0)


def test_the_model_runs_where_jax_cannot_be_imported(run_dir, tmp_path):
    """The file stands alone: a fresh interpreter with jax (and jaxrl, flax) blocked runs it
    in ONNX Runtime and gives load_policy's actions."""
    out = runs.load_policy(run_dir / "sac").export_onnx(tmp_path / "alone.onnx")
    obs = _real_observations()
    np.save(tmp_path / "obs.npy", obs)
    script = f"""
import sys
for name in ("jax", "jaxlib", "jaxrl", "flax"):
    sys.modules[name] = None  # import jax now raises ImportError
import numpy as np, onnxruntime as ort
session = ort.InferenceSession({str(out)!r}, providers=["CPUExecutionProvider"])
actions = session.run(["actions"], {{"obs": np.load({str(tmp_path / "obs.npy")!r})}})[0]
try:
    import jax
except ImportError:
    np.save({str(tmp_path / "actions.npy")!r}, actions)
"""
    subprocess.run([sys.executable, "-c", script], check=True, cwd=tmp_path)
    want = runs.load_policy(run_dir / "sac")(obs)
    np.testing.assert_allclose(np.load(tmp_path / "actions.npy"), np.asarray(want), atol=TOLERANCE)


# --- Brax's own checkpoints --------------------------------------------------------------

BRAX_RUN = dict(
    num_timesteps=64, num_envs=4, episode_length=13, num_evals=2, num_eval_envs=4,
    normalize_observations=True, seed=1,
)  # fmt: skip


@pytest.fixture(scope="module")
def brax_checkpoints(tmp_path_factory):
    """Checkpoint folders written by Brax's own ppo.train and sac.train on a tiny env."""
    import functools

    from brax.envs import training as brax_training
    from brax.training.agents.ppo import networks as ppo_networks
    from brax.training.agents.ppo import train as brax_ppo
    from brax.training.agents.sac import networks as sac_networks
    from brax.training.agents.sac import train as brax_sac

    brax_peer.install_shims()
    folder = tmp_path_factory.mktemp("brax")
    env = brax_peer.MeteredDrift()
    ppo_factory = functools.partial(
        ppo_networks.make_ppo_networks, policy_hidden_layer_sizes=(8, 8),
        value_hidden_layer_sizes=(8,),
    )  # fmt: skip
    brax_ppo.train(
        env, **BRAX_RUN, batch_size=4, num_minibatches=2, unroll_length=4,
        network_factory=ppo_factory, save_checkpoint_path=str(folder / "ppo"),
    )  # fmt: skip
    sac_factory = functools.partial(
        sac_networks.make_sac_networks, hidden_layer_sizes=(8, 8), q_network_layer_norm=True
    )
    brax_sac.train(
        env, **BRAX_RUN, batch_size=8, min_replay_size=8, grad_updates_per_step=1,
        network_factory=sac_factory, checkpoint_logdir=str(folder / "sac"),
        wrap_env_fn=brax_training.wrap,
    )  # fmt: skip
    return {"ppo": (folder / "ppo", ppo_factory), "sac": (folder / "sac", sac_factory)}


def _brax_greedy(kind, folder, factory, obs):
    from brax.training import checkpoint
    from brax.training.acme import running_statistics

    networks_module = __import__(f"brax.training.agents.{kind}.networks", fromlist=["x"])
    params = checkpoint.load(folder)
    params = tuple(params) if kind == "sac" else tuple(params)[:2]
    nets = factory(obs.shape[-1], A, preprocess_observations_fn=running_statistics.normalize)
    policy = networks_module.make_inference_fn(nets)(params, deterministic=True)
    return np.asarray(policy(jnp.asarray(obs), None)[0])


@pytest.mark.parametrize("kind", ["ppo", "sac"])
def test_a_brax_checkpoint_exports_brax_s_greedy_policy(kind, brax_checkpoints, tmp_path, capsys):
    root, factory = brax_checkpoints[kind]
    steps = sorted(p.name for p in root.iterdir())
    obs = np.random.RandomState(2).randn(32, 3).astype(np.float32) * 3
    out = tmp_path / "brax.onnx"
    # The folder of checkpoints (its newest), and one <step>/ folder
    for source, step in ((root, steps[-1]), (root / steps[0], steps[0])):
        assert f"brax_{kind} policy" in _ok(capsys, str(source), "--out", str(out))
        want = _brax_greedy(kind, root / step, factory, obs)
        np.testing.assert_allclose(_run(out, obs), want, atol=TOLERANCE)
    _ok(capsys, str(root), "--out", str(out), "--checkpoint-step", str(int(steps[0])))
    np.testing.assert_allclose(
        _run(out, obs), _brax_greedy(kind, root / steps[0], factory, obs), atol=TOLERANCE
    )


@pytest.mark.parametrize("kind", ["ppo", "sac"])
def test_load_policy_reads_a_brax_checkpoint(kind, brax_checkpoints, tmp_path):
    """`jaxrl.load_policy(folder)` of a Brax checkpoint: Brax's greedy action of one
    observation or a batch, `export_onnx` as `jaxrl export` writes it, the metadata."""
    import shutil

    brax_root, factory = brax_checkpoints[kind]
    written = sorted(p.name for p in brax_root.iterdir())[-1]
    root = tmp_path / "steps"  # two steps: the newest is taken unless one is named
    for step in (written, f"{int(written) * 2:012d}"):
        shutil.copytree(brax_root / written, root / step)
    newest = sorted(p.name for p in root.iterdir())[-1]
    obs = np.random.RandomState(3).randn(16, 3).astype(np.float32) * 3
    policy = runs.load_policy(root)
    want = _brax_greedy(kind, root / newest, factory, obs)
    np.testing.assert_allclose(np.asarray(policy(obs)), want, atol=1e-6)
    np.testing.assert_allclose(np.asarray(policy(obs[4])), want[4], atol=1e-6)
    path = policy.export_onnx(tmp_path / "brax.onnx")
    np.testing.assert_allclose(_run(path, obs), want, atol=TOLERANCE)
    meta = {p.key: p.value for p in onnx.load(path).metadata_props}
    assert meta["algorithm"] == f"brax_{kind}" and meta["env_steps"] == str(int(newest))
    assert (meta["observation_size"], meta["action_size"], meta["env"]) == ("3", str(A), "")
    assert meta["normalized_observations"] == "True"
    first = runs.load_policy(root, checkpoint_step=int(written))
    assert first.folder == root / written and first.metadata["env_steps"] == str(int(written))
    with pytest.raises(runs.RunError, match="member does not apply"):
        runs.load_policy(root, member=0)


def test_brax_s_own_loader_fails_on_the_ppo_checkpoints_it_writes(brax_checkpoints):
    """Why the exporter reads the config itself: the `null` mean-kernel initialiser that
    ppo.train writes is a KeyError in Brax 0.14.2's load_policy."""
    from brax.training.agents.ppo import checkpoint

    root, _ = brax_checkpoints["ppo"]
    newest = sorted(root.iterdir())[-1]
    saved = json.loads((newest / "ppo_network_config.json").read_text())
    assert saved["network_factory_kwargs"]["mean_kernel_init_fn"] is None
    with pytest.raises(KeyError):
        checkpoint.load_policy(newest)


# --- Bad input ----------------------------------------------------------------------------


def test_bad_input_is_one_line_exit_2_and_nothing_written(
    run_dir, brax_checkpoints, tmp_path, capsys
):
    import shutil

    out = tmp_path / "x.onnx"
    root, _ = brax_checkpoints["ppo"]
    newest = sorted(root.iterdir())[-1]
    for name, change in (("option", {"wavelet_layers": 3}), ("activation", {"activation": "erf"})):
        shutil.copytree(newest, tmp_path / name / newest.name)
        config = tmp_path / name / newest.name / "ppo_network_config.json"
        saved = json.loads(config.read_text())
        saved["network_factory_kwargs"].update(change)
        config.write_text(json.dumps(saved))
    (tmp_path / "empty").mkdir()
    (tmp_path / "junk.policy").write_bytes(b"not a policy")
    unknown = tmp_path / "unknown" / "000000000010"
    unknown.mkdir(parents=True)
    (unknown / "ppo_network_config.json").write_text('{"something": "else"}')
    cases = [
        ((str(tmp_path / "nothing"), "--out", str(out)), "no such file or folder"),
        ((str(tmp_path / "empty"), "--out", str(out)), "neither a jaxrl run"),
        (
            (str(tmp_path / "junk.policy"), "--out", str(out)),
            "neither a run folder nor a policy file",
        ),
        ((str(tmp_path / "unknown"), "--out", str(out)), "is not a Brax network config"),
        ((str(tmp_path / "option"), "--out", str(out)), "network factory refuses it"),
        ((str(tmp_path / "activation"), "--out", str(out)), "activation 'erf'"),
        ((str(run_dir / "sac" / "checkpoints"), "--out", str(out)), "neither a jaxrl run"),
        ((str(run_dir / "sac"), "--out", str(tmp_path / "no" / "x.onnx")), "--out"),
        ((str(run_dir / "sac"), "--out", str(tmp_path)), "a folder, not a file"),
        ((str(run_dir / "sac"), "--out", str(out), "--opset", "9"), "--opset 9"),
        ((str(run_dir / "sac"), "--out", str(out), "--checkpoint-step", "7"), "7"),
        ((str(run_dir / "sac"), "--out", str(out), "--member", "3"), "member 3"),
    ]
    for argv, message in cases:
        code, printed, err = _cli(capsys, *argv)
        assert code == 2 and message in err, (argv, err)
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
        assert not out.exists() and not (tmp_path / "no").exists()


def test_without_the_export_extra_it_says_what_to_install(run_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)
    code, _, err = _cli(capsys, str(run_dir / "sac"), "--out", str(tmp_path / "x.onnx"))
    assert code == 2 and "pip install 'jaxrl[export]'" in err
    assert not (tmp_path / "x.onnx").exists()


def test_a_policy_that_draws_random_numbers_is_refused_by_name():
    def noisy(inputs):
        return inputs["obs"] + jax.random.normal(jax.random.PRNGKey(0), inputs["obs"].shape)

    from jaxrl.export.graph import to_model

    with pytest.raises(ExportError, match="draws random numbers .*'random_"):
        to_model(noisy, {"obs": 3}, "actions")
