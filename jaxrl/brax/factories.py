"""Brax's `network_factory` and `wrap_env_fn` arguments, read as jaxrl settings.

A factory is Brax's `ppo_networks.make_ppo_networks` (`sac_networks.make_sac_networks`) or a
`functools.partial` of it (what Playground's notebooks pass): its options become jaxrl's PPO
(SAC) network settings, which build the same networks (the same layers, activation and
initialisers; tests/brax/test_params.py holds them equal), so the run keeps the store of
compiled programs and the proven parity path. Any other PPO factory (a function of the
caller's, or options jaxrl's networks lack: layer norm, other activations or initialisers, a
clipped mean) is run as it is: its `PPONetworks` become the agent's networks (network
injection, `ppo_networks`). What jaxrl cannot use (a Gaussian without tanh, a distributional
critic, dict observations through injected networks; for SAC any option its networks lack)
is refused by name. The factory itself still builds Brax's networks for `make_inference_fn`,
so the policy a caller gets back is Brax's own.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

from jaxrl.errors import ConfigError, JaxrlError

# Options that change nothing jaxrl builds: the std settings of Brax's 'normal' distribution
# only (its 'tanh_normal' policy outputs mean and raw std), and the quantiles of a
# distributional critic (refused apart).
_INERT = {"noise_std_type", "init_noise_std", "state_dependent_std", "num_quantiles",
          "preprocess_observations_fn"}  # fmt: skip
_DEFAULTS = {
    "distribution_type": "tanh_normal",
    "mean_clip_scale": None,
    "mean_kernel_init_fn": None,
    "mean_kernel_init_kwargs": None,
    "policy_network_kernel_init_kwargs": None,
    "value_network_kernel_init_kwargs": None,
    "use_distributional_critic": False,
}


@dataclasses.dataclass(frozen=True)
class NetworkSettings:
    """A Brax factory read as jaxrl settings: `agent` (PPOConfig fields), `train`
    (TrainConfig fields: the observation entries), and the factory itself."""

    factory: Callable
    agent: dict
    train: dict
    injected: bool = False  # the factory's own networks run (`ppo_networks`), not jaxrl's


class _Untranslatable(JaxrlError):
    """A factory whose networks jaxrl's own settings cannot build (the reason in its text)."""


def unwrapped(factory: Callable) -> tuple[Callable, dict]:
    """(the function, its options by name) of a factory or a functools.partial of one."""
    options: dict = {}
    while isinstance(factory, functools.partial):
        if factory.args:
            raise ConfigError(
                "network_factory: a functools.partial with positional arguments cannot be read; "
                "give its options by name"
            )
        options = {**factory.keywords, **options}
        factory = factory.func
    return factory, options


def _options(factory: Callable, expected: Callable, door: str, module: str) -> dict:
    """The options a factory (`expected`, or a partial of it) passes by name, else a
    ConfigError saying what jaxrl.brax.<door> reads."""
    func, options = unwrapped(factory)
    if func is not expected:
        raise ConfigError(
            f"network_factory={getattr(func, '__qualname__', func)!r} cannot be read by "
            f"jaxrl.brax.{door}: pass Brax's {module}.{expected.__name__} or a "
            "functools.partial of it (its options by name)"
        )
    return options


def _activation(value: Any, algo: str = "PPO") -> str:
    import jax

    for name, fn in (("swish", jax.nn.swish), ("relu", jax.nn.relu)):
        if value is fn:
            return name
    raise ConfigError(
        f"network_factory: activation={getattr(value, '__name__', value)!r} cannot be built by "
        f"jaxrl's {algo} (swish/silu or relu)"
    )


def _kernel_init(value: Any, name: str, algo: str = "PPO") -> str:
    import jax

    inits = jax.nn.initializers
    for label, fn in (("lecun_uniform", inits.lecun_uniform), ("lecun_normal", inits.lecun_normal)):
        if value is fn:
            return label
    raise ConfigError(
        f"network_factory: {name}={getattr(value, '__name__', value)!r} cannot be built by "
        f"jaxrl's {algo} (lecun_uniform or lecun_normal)"
    )


def ppo_settings(factory: Callable, dict_obs: bool = False) -> NetworkSettings:
    """jaxrl's PPO settings for Brax's `network_factory` (None: make_ppo_networks), or, for a
    factory they cannot build, the factory's own networks injected (array observations)."""
    from brax.training.agents.ppo import networks as ppo_networks

    factory = factory or ppo_networks.make_ppo_networks
    try:
        return _ppo_translated(factory, dict_obs)
    except _Untranslatable as why:
        if dict_obs:
            raise ConfigError(
                f"network_factory: {why}, and a factory run as it is (network injection) "
                "takes array observations only"
            ) from None
        return NetworkSettings(factory=factory, agent={}, train={}, injected=True)


def _ppo_translated(factory: Callable, dict_obs: bool) -> NetworkSettings:
    """jaxrl's PPO settings building `factory`'s networks, else _Untranslatable."""
    from brax.training.agents.ppo import networks as ppo_networks

    try:
        options = _options(factory, ppo_networks.make_ppo_networks, "ppo", "ppo_networks")
    except ConfigError as error:
        raise _Untranslatable(str(error)) from None
    for name, value in options.items():
        if name in _INERT or name in {
            "policy_hidden_layer_sizes", "value_hidden_layer_sizes", "activation",
            "policy_obs_key", "value_obs_key", "policy_network_kernel_init_fn",
            "value_network_kernel_init_fn",
        }:  # fmt: skip
            continue
        if name not in _DEFAULTS:
            raise ConfigError(f"network_factory: unknown make_ppo_networks option {name!r}")
        if value != _DEFAULTS[name] and not (value == {} and _DEFAULTS[name] is None):
            raise _Untranslatable(
                f"network_factory: {name}={value!r} cannot be built by jaxrl's PPO (only "
                f"{_DEFAULTS[name]!r})"
            )
    import jax

    inits = jax.nn.initializers
    try:
        policy_init = _kernel_init(
            options.get("policy_network_kernel_init_fn", inits.lecun_uniform),
            "policy_network_kernel_init_fn",
        )
        value_init = _kernel_init(
            options.get("value_network_kernel_init_fn", inits.lecun_uniform),
            "value_network_kernel_init_fn",
        )
        activation = _activation(options.get("activation", jax.nn.swish))
    except ConfigError as error:
        raise _Untranslatable(str(error)) from None
    if policy_init != value_init:
        raise _Untranslatable(
            f"network_factory: the policy's {policy_init} and the value network's {value_init} "
            "initialisers differ; jaxrl's PPO initialises both networks alike"
        )
    agent = {
        "actor_hidden": tuple(options.get("policy_hidden_layer_sizes", (32,) * 4)),
        "critic_hidden": tuple(options.get("value_hidden_layer_sizes", (256,) * 5)),
        "activation": activation,
        "kernel_init": policy_init,
    }
    train: dict = {}
    if dict_obs:
        train = {
            "actor_obs": options.get("policy_obs_key", "state"),
            "critic_obs": options.get("value_obs_key", "state"),
        }
    return NetworkSettings(factory=factory, agent=agent, train=train)


def _built(settings: NetworkSettings, observation_size: int, action_size: int, algo: str,
           critic: str, tanh: bool = True) -> tuple[str, Any]:  # fmt: skip
    """(the factory's name, the networks it builds for these sizes with Brax's identity
    preprocessor), checked to be Brax's kind (`critic`: "value_network" or "q_network") with,
    where `tanh`, a tanh-squashed Gaussian policy, else a ConfigError naming the factory."""
    from brax.training import distribution, types

    name = getattr(unwrapped(settings.factory)[0], "__qualname__", settings.factory)
    try:
        nets = settings.factory(
            observation_size,
            action_size,
            preprocess_observations_fn=types.identity_observation_preprocessor,
        )
    except (TypeError, ValueError) as error:
        raise ConfigError(f"network_factory={name!r} failed: {error}") from None
    parts = ("policy_network", critic, "parametric_action_distribution")
    if not all(hasattr(nets, part) for part in parts):
        raise ConfigError(
            f"network_factory={name!r} returned a {type(nets).__name__}, not Brax's "
            f"{algo}Networks ({', '.join(parts)})"
        )
    dist = nets.parametric_action_distribution
    if tanh and not isinstance(getattr(dist, "_postprocessor", None), distribution.TanhBijector):
        raise ConfigError(
            f"network_factory={name!r}: its {type(dist).__name__} is no tanh-squashed "
            f"Gaussian; jaxrl's {algo} samples tanh-squashed Gaussian actions "
            "(distribution_type='tanh_normal')"
        )
    return name, nets


def brax_distribution(dist: Any):
    """jaxrl's PPO `Distribution` of a Brax `ParametricDistribution` (`tanh_normal`'s, or
    `normal`'s with its learned std): Brax's own log-probability, entropy, sample,
    postprocessing and mode, so an injected policy's numbers are Brax's. `act` scales the
    noise about the mode (at a Python 0: the mode, drawing nothing)."""
    import jax.numpy as jnp

    from jaxrl import distributions
    from jaxrl.agents import ppo

    def explore(key, out):
        raw = dist.sample_no_postprocessing(out, key)
        return dist.postprocess(raw), raw, dist.log_prob(out, raw)

    def act(key, out, noise_scale):
        if distributions.is_zero(noise_scale):
            return dist.mode(out)  # the postprocessed mode: tanh(mean), or the mean
        mode = dist.create_dist(out).mode()
        scale = jnp.expand_dims(jnp.asarray(noise_scale, mode.dtype), -1)
        return dist.postprocess(mode + scale * (dist.sample_no_postprocessing(out, key) - mode))

    def moments(out):
        gaussian = dist.create_dist(out)
        return gaussian.loc, gaussian.scale

    return ppo.Distribution(
        log_prob=dist.log_prob,
        entropy=lambda key, out: dist.entropy(out, key),
        explore=explore,
        act=act,
        moments=moments,
    )


def _mean_log_std(dist: Any, logits: Any) -> tuple:
    """(mean, log std) of the pre-tanh Gaussian Brax's `dist` makes of a policy's outputs."""
    import jax.numpy as jnp

    gaussian = dist.create_dist(logits)
    return gaussian.loc, jnp.log(gaussian.scale)


def ppo_networks(settings: NetworkSettings, observation_size: int, action_size: int):
    """jaxrl's PPO networks (`jaxrl.agents.ppo.Networks`) running the `PPONetworks` that
    `settings.factory` builds for these sizes, with no normalisation of their own (jaxrl's loop
    hands them normalised observations): Brax's parameter trees, initialised as Brax's
    `ppo.train` does (one key split into the policy's and the value network's), the policy's
    tanh-Gaussian read through the factory's own `parametric_action_distribution`. Checked by
    tracing, before anything compiles: a factory that fails, returns something else, or whose
    distribution or value output jaxrl's PPO cannot use is refused by name."""
    import jax
    import jax.numpy as jnp

    from jaxrl.agents import ppo

    name, nets = _built(settings, observation_size, action_size, "PPO", "value_network", False)
    dist = nets.parametric_action_distribution

    def init(key, obs_size: int, act_size: int, critic_obs_size: int | None = None) -> dict:
        policy_key, value_key = jax.random.split(key)
        return {
            "policy": nets.policy_network.init(policy_key),
            "value": nets.value_network.init(value_key),
        }

    def policy(params, obs, act_size: int):  # the distribution's parameters
        return nets.policy_network.apply(None, params["policy"], obs)

    def value(params, obs):
        return nets.value_network.apply(None, params["value"], obs)

    injected = ppo.Networks(init, policy, value, brax_distribution(dist))
    params = jax.eval_shape(init, jax.random.PRNGKey(0), observation_size, action_size)
    obs = jax.ShapeDtypeStruct((1, observation_size), jnp.float32)
    out = jax.eval_shape(policy, params, obs, action_size)
    explore = injected.distribution.explore
    action, _, log_prob = jax.eval_shape(explore, jax.random.PRNGKey(0), out)
    values = jax.eval_shape(value, params, obs)
    if action.shape != (1, action_size) or log_prob.shape != (1,):
        raise ConfigError(
            f"network_factory={name!r}: its policy gives actions of shape {action.shape[1:]} "
            f"for {action_size} actions"
        )
    if getattr(values, "shape", None) != (1,):
        got = jax.tree.map(lambda x: x.shape[1:], values)
        raise ConfigError(
            f"network_factory={name!r}: its value network gives {got} per observation, not "
            "one value (a distributional critic is not supported)"
        )
    return injected


# make_sac_networks' options jaxrl builds as they are, and those it builds only at Brax's
# default; the std options shape Brax's 'normal' distribution only, not the 'tanh_normal' one.
_SAC_READ = {"hidden_layer_sizes", "activation", "q_network_layer_norm",
             "policy_network_kernel_init_fn", "q_network_kernel_init_fn"}  # fmt: skip
_SAC_INERT = {"noise_std_type", "init_noise_std", "state_dependent_std",
              "preprocess_observations_fn"}  # fmt: skip
_SAC_DEFAULTS = {
    "distribution_type": "tanh_normal",
    # Brax's policy MLP puts LayerNorm after the activation, jaxrl's SAC policy before it.
    "policy_network_layer_norm": False,
    "policy_network_kernel_init_kwargs": None,
    "q_network_kernel_init_kwargs": None,
}


def sac_settings(factory: Callable, inject: bool = False, door: str = "sac") -> NetworkSettings:
    """jaxrl's SAC settings for Brax's `network_factory` (None: make_sac_networks): two
    critics of Brax's MLP (LayerNorm after the ReLU, where asked), the softplus std head.
    A factory they cannot build is refused (by `jaxrl.brax.<door>`), or, with `inject` (SAC's
    own door), run as it is (`sac_networks`)."""
    from brax.training.agents.sac import networks as sac_networks

    factory = factory or sac_networks.make_sac_networks
    try:
        return _sac_translated(factory, door)
    except _Untranslatable as why:
        if not inject:
            raise ConfigError(
                f"{why}; only jaxrl.brax.sac runs other factories as they are"
            ) from None
        return NetworkSettings(factory=factory, agent={}, train={}, injected=True)


def _sac_translated(factory: Callable, door: str) -> NetworkSettings:
    """jaxrl's SAC settings building `factory`'s networks, else _Untranslatable."""
    import jax
    from brax.training.agents.sac import networks as sac_networks

    try:
        options = _options(factory, sac_networks.make_sac_networks, door, "sac_networks")
    except ConfigError as error:
        raise _Untranslatable(str(error)) from None
    for name, value in options.items():
        if name in _SAC_READ or name in _SAC_INERT:
            continue
        if name not in _SAC_DEFAULTS:
            raise ConfigError(f"network_factory: unknown make_sac_networks option {name!r}")
        if value != _SAC_DEFAULTS[name] and not (value == {} and _SAC_DEFAULTS[name] is None):
            raise _Untranslatable(
                f"network_factory: {name}={value!r} cannot be built by jaxrl's SAC (only "
                f"{_SAC_DEFAULTS[name]!r})"
            )
    inits = jax.nn.initializers
    try:
        policy_init, q_init = (
            _kernel_init(options.get(name, inits.lecun_uniform), name, "SAC")
            for name in ("policy_network_kernel_init_fn", "q_network_kernel_init_fn")
        )
        activation = _activation(options.get("activation", jax.nn.relu), "SAC")
    except ConfigError as error:
        raise _Untranslatable(str(error)) from None
    if policy_init != q_init:
        raise _Untranslatable(
            f"network_factory: the policy's {policy_init} and the Q network's {q_init} "
            "initialisers differ; jaxrl's SAC initialises both networks alike"
        )
    hidden = tuple(options.get("hidden_layer_sizes", (256, 256)))
    layer_norm = bool(options.get("q_network_layer_norm", False))
    agent = {
        "actor_hidden": hidden,
        "critic_hidden": hidden,
        "activation": activation,
        "kernel_init": policy_init,
        "critic_layer_norm": layer_norm,
        "critic_norm_after_relu": layer_norm,
    }
    return NetworkSettings(factory=factory, agent=agent, train={})


def sac_networks(
    settings: NetworkSettings, observation_size: int, action_size: int, num_critics: int
):
    """jaxrl's SAC networks (`jaxrl.agents.sac_family.Networks`) running the `SACNetworks`
    that `settings.factory` builds for these sizes, with no normalisation of their own: Brax's
    trees, initialised as Brax's `sac.train` does (one key split into the policy's and the Q
    network's), its critics' [B, E] values as jaxrl's [E, B]. Checked by tracing before
    anything compiles, as `ppo_networks`."""
    import jax
    import jax.numpy as jnp

    from jaxrl.agents import sac_family

    name, nets = _built(settings, observation_size, action_size, "SAC", "q_network")
    dist = nets.parametric_action_distribution

    def init(key, obs_size: int, act_size: int, critic_obs_size: int | None = None):
        policy_key, q_key = jax.random.split(key)
        return nets.policy_network.init(policy_key), nets.q_network.init(q_key)

    def actor(params, obs, act_size: int):
        return _mean_log_std(dist, nets.policy_network.apply(None, params, obs))

    def critic(params, obs, action, key):  # no dropout in Brax's Q networks: key unused
        return jnp.moveaxis(nets.q_network.apply(None, params, obs, action), -1, 0)

    injected = sac_family.Networks(init, actor, critic)
    actor_params, critic_params = jax.eval_shape(
        init, jax.random.PRNGKey(0), observation_size, action_size
    )
    obs = jax.ShapeDtypeStruct((1, observation_size), jnp.float32)
    mean, log_std = jax.eval_shape(actor, actor_params, obs, action_size)
    if mean.shape != (1, action_size) or log_std.shape != (1, action_size):
        raise ConfigError(
            f"network_factory={name!r}: its policy gives a mean of shape {mean.shape[1:]} and "
            f"a std of {log_std.shape[1:]} for {action_size} actions"
        )
    action = jax.ShapeDtypeStruct((1, action_size), jnp.float32)
    values = jax.eval_shape(critic, critic_params, obs, action, jax.random.PRNGKey(0))
    if getattr(values, "shape", None) != (num_critics, 1):
        got = jax.tree.map(lambda x: x.shape, values)
        raise ConfigError(
            f"network_factory={name!r}: its Q network gives {got} for one row, not one value "
            f"per critic for {num_critics} critics"
        )
    return injected


def make_inference_fn(settings: NetworkSettings, env: Any, normalize: bool) -> Callable:
    """Brax's `make_inference_fn` of the networks the caller's factory builds for `env`
    (PPO's or SAC's, by the factory's module)."""
    from brax.training import types
    from brax.training.acme import running_statistics
    from brax.training.agents.ppo import networks as ppo_networks
    from brax.training.agents.sac import networks as sac_networks

    preprocess = (
        running_statistics.normalize if normalize else types.identity_observation_preprocessor
    )
    networks = settings.factory(
        env.observation_size, env.action_size, preprocess_observations_fn=preprocess
    )
    module = sac_networks if isinstance(networks, sac_networks.SACNetworks) else ppo_networks
    return module.make_inference_fn(networks)


def autoreset_of(wrap_env_fn: Callable | None) -> str | None:
    """jaxrl's autoreset for Brax's or Playground's training wrapper (None: Brax's default,
    back to the first state), or a ConfigError for a wrapper jaxrl cannot stand in for."""
    if wrap_env_fn is None:
        return "first"
    func, options = unwrapped(wrap_env_fn)
    import brax.envs

    known = [brax.envs.training.wrap]
    try:
        from mujoco_playground import wrapper

        known.append(wrapper.wrap_for_brax_training)
    except ImportError:  # Playground not installed: only Brax's own wrapper is known
        pass
    if func not in known or set(options) - {"full_reset"}:
        raise ConfigError(
            f"wrap_env_fn={getattr(func, '__qualname__', func)!r} cannot be honoured: only "
            "Brax's envs.training.wrap and Playground's wrapper.wrap_for_brax_training (what "
            "jaxrl's own wrappers do) are accepted"
        )
    return "random" if options.get("full_reset") else "first"
