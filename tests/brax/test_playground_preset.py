"""`jaxrl train --preset playground`: Playground's own brax_ppo_config / brax_sac_config of the
--env task, field by field in jaxrl's configs, flags on top; bad combinations refused by name
before anything compiles."""

from __future__ import annotations

import pytest

from jaxrl import cli
from jaxrl.brax import playground
from jaxrl.config import ConfigError, resolve

TASK = "CartpoleBalance"


def _configs(algo: str, *flags: str):
    argv = ["--algo", algo, "--env", f"playground/{TASK}", "--preset", "playground", *flags]
    train, agent, _ = resolve.build_configs(argv)
    return train, agent


def test_ppo_starts_from_playground_s_brax_ppo_config():
    from mujoco_playground.config import dm_control_suite_params

    want = dm_control_suite_params.brax_ppo_config(TASK)
    train, agent = _configs("ppo")
    assert train.algo == "ppo" and train.env == f"playground/{TASK}"
    assert (train.num_envs, train.episode_length, train.action_repeat) == (
        want.num_envs, want.episode_length, want.action_repeat,
    )  # fmt: skip
    # Brax's training step: batch_size x num_minibatches unrolls of unroll_length, over envs.
    unrolls = want.batch_size * want.num_minibatches // want.num_envs
    assert train.unroll_length == want.unroll_length * unrolls
    assert train.gamma == want.discounting and train.normalize_observations
    assert train.total_steps >= want.num_timesteps
    assert (agent.learning_rate, agent.entropy_coef, agent.reward_scale) == (
        want.learning_rate, want.entropy_cost, want.reward_scaling,
    )  # fmt: skip
    assert (agent.num_epochs, agent.num_minibatches) == (
        want.num_updates_per_batch, want.num_minibatches,
    )  # fmt: skip
    assert agent.actor_hidden == (32, 32, 32, 32)  # Brax's make_ppo_networks' default
    # Flags change fields on top of it.
    train, agent = _configs("ppo", "--num-envs", "64", "--learning-rate", "3e-4")
    assert train.num_envs == 64 and agent.learning_rate == 3e-4 and agent.num_epochs == 16


def test_sac_starts_from_playground_s_brax_sac_config():
    from mujoco_playground.config import dm_control_suite_params

    want = dm_control_suite_params.brax_sac_config(TASK)
    train, agent = _configs("sac")
    assert (train.num_envs, train.batch_size, train.updates_per_step) == (
        want.num_envs, want.batch_size, want.grad_updates_per_step,
    )  # fmt: skip
    assert train.buffer_size == want.max_replay_size and train.gamma == want.discounting
    # Brax's prefill of min_replay_size rows by the untrained policy, as warm-up steps.
    assert train.learning_starts == want.min_replay_size and train.warmup_actions == "policy"
    assert train.total_steps >= want.num_timesteps
    assert (agent.actor_lr, agent.critic_lr) == (want.learning_rate, want.learning_rate)
    assert agent.critic_layer_norm and agent.critic_norm_after_relu  # q_network_layer_norm
    assert agent.reward_scale == want.reward_scaling


def test_a_locomotion_config_s_network_factory_becomes_brax_s():
    """Playground's locomotion configs name their networks (sizes, observation keys): the
    factory handed to the door is Brax's make_ppo_networks with those options."""
    from brax.training.agents.ppo.networks import make_ppo_networks

    values = playground.playground_config("ppo", "Go1JoystickFlatTerrain")
    factory = values["network_factory"]
    assert factory.func is make_ppo_networks
    assert factory.keywords == {
        "policy_hidden_layer_sizes": (512, 256, 128),
        "value_hidden_layer_sizes": (512, 256, 128),
        "policy_obs_key": "state",
        "value_obs_key": "privileged_state",
    }


@pytest.mark.parametrize(
    "argv,said",
    [
        (["--algo", "td3", "--env", "playground/CartpoleBalance"], "pass --algo ppo or --algo sac"),
        (["--algo", "ppo", "--env", "brax/ant"], "needs --env playground/TASK (got brax/ant)"),
        (["--algo", "ppo"], "needs --env playground/TASK"),
        (
            ["--algo", "sac", "--env", "playground/Go1JoystickFlatTerrain"],
            "no brax_sac_config for its locomotion tasks",
        ),
    ],
)
def test_what_playground_has_no_config_for_is_refused_by_name(tmp_path, capsys, argv, said):
    out = tmp_path / "run"
    assert cli.main(["train", "--preset", "playground", *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1
    assert not out.exists()
    with pytest.raises(ConfigError, match="Available: .*and playground"):
        resolve.build_configs(["--preset", "playgrund"])
    with pytest.raises(ConfigError, match="jaxrl.brax.playground.configs"):
        resolve.preset("playground")


def test_env_options_reach_the_env_the_config_is_planned_on(monkeypatch):
    """--env-option changes the task the run trains on, so the door plans on that task too
    (its observation size, for one), not on Playground's default one."""
    from jaxrl import envs

    made = []
    make = envs.make
    monkeypatch.setattr(
        envs, "make", lambda name, **options: made.append(options) or make(name, **options)
    )
    train, _ = _configs("ppo", "--env-option", "episode_length=500")
    assert made == [{"episode_length": 500}]
    assert train.env_options == {"episode_length": 500}


def test_every_config_playground_has_is_taken_as_it_is():
    """Every task of Playground's DM Control, locomotion and manipulation registries, with
    each training config Playground has for it: every key is an argument of the door, none is
    refused, and the network factory's options are ones the door runs (on the observations
    its keys say: a dict where it names entries). Building every env (robot assets included)
    is left to the tasks tested above; a refusal here names the argument."""
    import inspect

    from mujoco_playground import registry

    from jaxrl.brax import arguments, factories, ppo, sac

    taken = []
    for family, (_, algos) in playground._FAMILIES.items():
        for task in getattr(registry, family).ALL_ENVS:
            for algo in algos:
                values = playground.playground_config(algo, task)
                door = {"ppo": ppo, "sac": sac}[algo]
                parameters = inspect.signature(door.train).parameters
                assert set(values) <= set(parameters), (task, algo)
                settings = {name: p.default for name, p in parameters.items()}
                settings.update(values)
                if algo == "ppo":
                    ppo._refuse(settings)
                    factory = settings["network_factory"]
                    keys = getattr(factory, "keywords", {})
                    dict_obs = "policy_obs_key" in keys or "value_obs_key" in keys
                    factories.ppo_settings(factory, dict_obs)
                else:
                    arguments.refuse(settings, sac._REFUSED, "jaxrl.brax.sac")
                taken.append((family, algo))
    assert {("dm_control_suite", "sac"), ("locomotion", "ppo"), ("manipulation", "ppo")} <= set(
        taken
    )
    assert len(taken) > 60  # Playground 0.2: 79 configs
