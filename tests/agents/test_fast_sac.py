"""FastSAC's own mechanisms, one at a time (its whole update against numpy:
test_fast_sac_update_reference.py): the reference implementation's defaults, the policy's
zero-initialised head, LayerNorm and SiLU, C51 critics that each learn their own target critic,
the temperature at every update and the actor every fourth, AdamW with beta2 0.95, and the
options SAC gained for it leaving SAC as it was."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import heads
from jaxrl.agents import fast_sac, sac, sac_family
from jaxrl.experiments.presets import PRESETS
from tests import reference as ref

OBS, ACT = 3, 2
SMALL = dict(actor_hidden=(8, 8), critic_hidden=(8,), num_atoms=11, v_min=-2.0, v_max=2.0)


def test_defaults_are_the_reference_implementation_s():
    """amazon-far/holosoma's `fast_sac` algo values (HEAD fc600e7), field by field."""
    config = fast_sac.FastSACConfig()
    reference = {
        "actor_hidden": (512, 256, 128),  # actor_hidden_dim 512, then // 2, // 4
        "critic_hidden": (768, 384, 192),  # critic_hidden_dim 768
        "activation": "swish",  # nn.SiLU
        "actor_layer_norm": True,  # use_layer_norm, both networks
        "critic_layer_norm": True,
        "num_critics": 2,  # num_q_networks
        "num_atoms": 101,
        "v_min": -20.0,
        "v_max": 20.0,
        "actor_lr": 3e-4,
        "critic_lr": 3e-4,
        "alpha_lr": 3e-4,
        "tau": 0.125,
        "init_alpha": 0.001,  # alpha_init
        "target_entropy_scale": 0.0,  # target_entropy_ratio
        "log_std_max": 0.0,
        "policy_delay": 4,  # policy_frequency
        "weight_decay": 0.001,
        "adam_b2": 0.95,  # betas=(0.9, 0.95), every optimiser
        "alpha_weight_decay": 0.01,  # torch's AdamW default: the reference names none
        "actor_q": "mean",  # q_values.mean(dim=0)
        "temperature_loss": "alpha",  # -log_alpha.exp() * (log_pi + H)
        "zero_policy_head": True,  # fc_mu and fc_logstd: constant 0
        "reward_scale": 1.0,
        "truncation": "bootstrap",  # bootstrap = truncations | ~dones
    }
    assert {name: getattr(config, name) for name in reference} == reference
    agent = fast_sac.make(dataclasses.replace(config, **SMALL))
    assert agent.name == "fast_sac"
    assert agent.loop_defaults == {"normalize_observations": True}  # obs_normalization


def test_the_playground_preset_is_the_reference_recipe():
    preset = PRESETS["fast_sac_playground"]
    train = preset["train"]
    assert preset["algo"] == "fast_sac" and preset["agent"] == {}
    envs = train["num_envs"]
    assert envs == 4096 and train["batch_size"] == 8192 and train["updates_per_step"] == 8
    assert train["gamma"] == 0.97 and train["buffer_size"] == 1024 * envs  # per env: 1024
    assert train["learning_starts"] == 10 * envs and train["warmup_actions"] == "policy"
    assert train["total_steps"] == 50_000 * envs  # the G1 experiment's iterations
    assert train["critic_obs"] == "privileged_state" and train["joint_limit_actions"]
    assert train["env"] == "playground/G1JoystickFlatTerrain"


def _state(config, key=0):
    agent = fast_sac.make(config)
    return agent, agent.init(jax.random.PRNGKey(key), OBS, ACT)


def test_the_policy_starts_at_mean_zero_and_mid_range_log_std_in_every_state():
    config = fast_sac.FastSACConfig(**SMALL)
    agent, state = _state(config)
    obs = 3.0 * jax.random.normal(jax.random.PRNGKey(1), (16, OBS))
    mean, log_std = sac_family.actor_network(config, ACT).apply(state.actor.params, obs)
    np.testing.assert_array_equal(mean, 0.0)
    np.testing.assert_allclose(log_std, -2.5)  # the middle of [-5, 0]: std 0.082
    head = state.actor.params["params"]["MLP_0"]["Dense_2"]
    np.testing.assert_array_equal(head["kernel"], 0.0)
    np.testing.assert_array_equal(head["bias"], 0.0)
    np.testing.assert_array_equal(agent.act(state, obs, jax.random.PRNGKey(2), 0.0), 0.0)
    # The hidden layers are drawn as usual: only the head starts at zero.
    assert np.abs(state.actor.params["params"]["MLP_0"]["Dense_0"]["kernel"]).min() > 0


def test_both_networks_are_layer_norm_and_silu():
    """The actor and each critic: Dense -> LayerNorm -> SiLU per hidden layer (numpy)."""
    config = fast_sac.FastSACConfig(**SMALL)
    _, state = _state(config)
    params = ref.perturbed(state.actor.params, jax.random.PRNGKey(3), 0.5)  # off the zero head
    obs = np.asarray(jax.random.normal(jax.random.PRNGKey(4), (5, OBS)), np.float64)
    mean, log_std = sac_family.actor_network(config, ACT).apply(params, obs)
    want = ref.gaussian_actor(
        ref.to64(params), obs, activation="swish", layer_norm_=True, log_std_max=0.0
    )
    np.testing.assert_allclose(mean, want[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(log_std, want[1], rtol=1e-5, atol=1e-6)
    assert (np.asarray(log_std) <= 0.0).all()
    action = np.tanh(mean)
    logits = sac_family.critic_network(config).apply(state.critic.params, obs, action)
    want = ref.q_ensemble(ref.to64(state.critic.params), obs, action, True, activation="swish")
    np.testing.assert_allclose(logits, want, rtol=1e-5, atol=1e-6)
    assert logits.shape == (2, 5, 11)


def _categorical_case():
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(5), 3)
    next_logits = 2.0 * jax.random.normal(k1, (2, 6, 7))
    reward = jax.random.normal(k2, (6,))
    terminated = jnp.array([0.0, 1.0, 0.0, 0.0, 0.0, 0.0])
    discount = jnp.full((6,), 0.9)
    bonus = 0.3 * jax.random.normal(k3, (6,))
    hp = {"v_min": jnp.float32(-3.0), "v_max": jnp.float32(3.0)}
    return next_logits, reward, terminated, discount, bonus, hp


def test_each_c51_critic_learns_its_own_target_critic():
    """`Categorical(clipped_double_q=False)`: target i is target critic i's next distribution,
    shifted by the reward and the soft bonus, projected; critic i learns from target i only."""
    next_logits, reward, terminated, discount, bonus, hp = _categorical_case()
    own = heads.Categorical(7, clipped_double_q=False)
    target = own.target(None, next_logits, reward, terminated, discount, bonus, hp)
    atoms = np.linspace(-3.0, 3.0, 7)
    bootstrap = np.asarray(discount * (1.0 - terminated), np.float64)
    shifted = np.asarray(reward, np.float64) + bootstrap * np.asarray(bonus, np.float64)
    probs = ref.softmax(np.asarray(next_logits, np.float64))
    want = [ref.categorical_projection(p, shifted, bootstrap, atoms) for p in probs]
    np.testing.assert_allclose(target, np.stack(want), rtol=1e-5, atol=1e-6)
    # FastTD3's head gives every critic the lower critic's projection, here another target.
    clipped = heads.Categorical(7).target(
        None, next_logits, reward, terminated, discount, bonus, hp
    )
    assert clipped.shape == (6, 7) and np.abs(target - clipped[None]).max() > 0.05
    # The loss pairs critic i with target i: swapping the targets changes it.
    logits = jax.random.normal(jax.random.PRNGKey(6), (2, 6, 7))
    loss, (values, _) = own.loss(logits, target, None, hp, True)
    want_loss = -(np.asarray(target) * ref.log_softmax(np.asarray(logits, np.float64))).sum(-1)
    np.testing.assert_allclose(loss, want_loss.mean(-1).sum(), rtol=1e-5)
    swapped, _ = own.loss(logits, target[::-1], None, hp, True)
    assert abs(float(swapped) - float(loss)) > 1e-3
    np.testing.assert_allclose(values, (ref.softmax(np.asarray(logits)) * atoms).sum(-1), rtol=1e-5)


def test_temperature_steps_every_update_and_the_actor_every_fourth():
    config = fast_sac.FastSACConfig(**SMALL)
    agent, state = _state(config)
    batch = ref.mixed_batch(jax.random.PRNGKey(7), 8, OBS, ACT)
    update = jax.jit(agent.update)
    actor_moved, alpha_moved = [], []
    for step in range(8):
        new, _ = update(state, batch, jax.random.PRNGKey(step))
        moved = jax.tree.map(
            lambda a, b: bool((a != b).any()), state.actor.params, new.actor.params
        )
        actor_moved.append(any(jax.tree.leaves(moved)))
        alpha_moved.append(bool(new.log_alpha.params != state.log_alpha.params))
        state = new
    assert actor_moved == [True, False, False, False, True, False, False, False]
    assert all(alpha_moved)


def test_the_optimisers_are_adamw_with_beta2_0_95():
    config = fast_sac.FastSACConfig(**SMALL)
    _, state = _state(config)
    for learner, decay in (
        (state.actor, 0.001),
        (state.critic, 0.001),
        (state.log_alpha, 0.01),
    ):
        hyper = learner.opt_state.hyperparams
        np.testing.assert_allclose(hyper["learning_rate"], 3e-4)
        np.testing.assert_allclose(hyper["b2"], 0.95)
        np.testing.assert_allclose(hyper["weight_decay"], decay)
    np.testing.assert_allclose(jnp.exp(state.log_alpha.params), 0.001, rtol=1e-6)
    assert set(state.hp) == {"tau", "target_entropy_scale", "reward_scale", "v_min", "v_max"}


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(temperature_draw="own"), "bootstrap action"),
        (dict(num_target_critics=1), "their own target critic"),
        (dict(adam_b2=1.0), "adam_b2 in"),
        (dict(alpha_weight_decay=-0.1), "alpha_weight_decay >= 0"),
        (dict(v_min=1.0, v_max=-1.0), "v_min < v_max"),
        (dict(log_std_max=-6.0), "log_std_max must be above -5"),
        (dict(activation="tanh"), "activation must be one of"),
    ],
)
def test_bad_settings_are_refused(change, message):
    with pytest.raises(ValueError, match=message):
        fast_sac.FastSACConfig(**change)


def test_sac_s_new_options_leave_sac_as_it_was():
    """The options FastSAC added to SAC's family default to SAC's networks: a ReLU policy with
    no LayerNorm, a log-std in [-5, 2] and a drawn head, and Adam (no decay) everywhere."""
    config = sac.SACConfig(actor_hidden=(8,), critic_hidden=(8,))
    assert (config.activation, config.actor_layer_norm, config.log_std_max) == ("relu", False, 2.0)
    assert not config.zero_policy_head
    state = sac.make(config).init(jax.random.PRNGKey(0), OBS, ACT)
    assert set(state.actor.params["params"]["MLP_0"]) == {"Dense_0", "Dense_1"}
    assert np.abs(state.actor.params["params"]["MLP_0"]["Dense_1"]["kernel"]).min() > 0
    assert "weight_decay" not in state.actor.opt_state.hyperparams
    obs = np.asarray(jax.random.normal(jax.random.PRNGKey(1), (4, OBS)), np.float64)
    mean, log_std = sac_family.actor_network(config, ACT).apply(state.actor.params, obs)
    want = ref.gaussian_actor(ref.to64(state.actor.params), obs)
    np.testing.assert_allclose(mean, want[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(log_std, want[1], rtol=1e-5, atol=1e-6)
