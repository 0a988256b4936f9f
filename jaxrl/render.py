"""Renders one greedy episode of a policy on a Brax or MuJoCo Playground task to a video file
(a classic task, which has no MuJoCo model, is drawn simply with matplotlib instead).

    render_policy("brax/inverted_pendulum", {}, policy, "videos/pendulum.mp4")

Headless by default: MuJoCo's OpenGL backend is chosen from the MUJOCO_GL environment variable
when `mujoco` is first imported, and with it unset MuJoCo picks GLFW, which needs a display.
This module defaults MUJOCO_GL to "egl" (headless, works with Mesa on a CPU-only machine). Since
mujoco may already be imported by then (through brax, by a Brax or Playground env), that default
can come too late, so `_ensure_gl_backend` re-reads the variable just before the first render
if mujoco was imported under a different value. If no EGL context can be made under that
default, rendering falls back to OSMesa (software); if neither works, RenderError names the
system packages to install (Debian/Ubuntu: libegl1 libgl1-mesa-dri for EGL, libosmesa6 for
OSMesa). Setting MUJOCO_GL in the shell (e.g. MUJOCO_GL=glfw on a desktop, or osmesa) is
always respected, with no fallback.

The rollout is jitted (a `lax.while_loop` that stops when the episode is done and records the
physics of every control step); the frames are rendered on the host with `mujoco.Renderer`
from the env's MjModel, the same way Brax's `PipelineEnv.render` and Playground's
`MjxEnv.render` do it (qpos/qvel, plus mocap and applied forces where the state has them, then
`mj_forward`), but with one renderer for all frames and camera ids honoured as given.
"""

from __future__ import annotations

import copy
import importlib
import os
import pathlib
import platform
import shutil
import sys
import warnings
from collections.abc import Callable
from typing import Any

# Before the imports below (envs imports brax, which imports mujoco, which reads MUJOCO_GL). The
# user's value (_USER_GL) is used alone; unset, the backend is ours: EGL, else OSMesa.
if not (_USER_GL := os.environ.get("MUJOCO_GL", "").strip()) and platform.system() == "Linux":
    os.environ["MUJOCO_GL"] = "egl"

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl import envs, gl
from jaxrl.errors import JaxrlError

VIDEO_SUFFIXES = (".mp4", ".gif")
DEFAULT_FPS = 30.0
# The headless backends tried in turn where MUJOCO_GL is ours to choose; the system packages
# each needs (Debian/Ubuntu names) are jaxrl.gl's.
GL_FALLBACKS = ("egl", "osmesa")
GL_PACKAGES, GL_NAMES = gl.PACKAGES, gl.NAMES


class RenderError(JaxrlError, ValueError):
    pass


def render_policy(
    env_name: str,
    env_options: dict | None,
    policy: Callable[[jax.Array], jax.Array],
    out: str | os.PathLike,
    *,
    max_steps: int | None = None,
    width: int = 320,
    height: int = 240,
    camera: str | int | None = None,
    seed: int = 0,
    episode_length: int | None = None,
    action_repeat: int | None = None,
    joint_limit_actions: bool = False,
) -> dict:
    """Rolls out one episode of `policy` from `reset(PRNGKey(seed))` and writes it as a video.

    `policy(obs) -> action` maps one observation [obs_size] to one action [action_size]; it is
    traced into a jitted rollout, so it must be a JAX function (e.g. `jaxrl.load_policy(run)`).
    The episode stops when done (termination or the time limit `episode_length`, default the
    task's) or after `max_steps` control steps (default the episode length). Each control step
    applies the action `action_repeat` times (default the task's), as in training. One frame
    per control step, plus the initial state; the video plays in real time (fps = 1 / (env.dt
    x action_repeat)). `camera`: a camera name or id of the MuJoCo model; None: the free camera.
    `out` must end in .mp4 or .gif; its folder is created.

    Returns {"path", "frames", "width", "height", "fps", "bytes", "return", "length"}:
    "return" is the undiscounted episode return, "length" the number of control steps.
    Classic tasks (classic/pendulum, classic/mountain_car_continuous), which have no MuJoCo
    model, are drawn simply with matplotlib instead (`draw_classic`; no cameras).
    Raises RenderError for a task with no MuJoCo model and no drawing, a bad size, file name or
    camera, or when no OpenGL context can be made.
    """
    path = pathlib.Path(out)
    _check_arguments(out, width, height, max_steps, episode_length, action_repeat)
    envs.check_name(env_name)
    base = envs.make(env_name, **dict(env_options or {}))
    draw, mj_model, camera_id = _drawing(env_name, base, camera)
    env, episode_length, action_repeat = envs.episode_env(  # as the run trained
        base,
        episode_length=episode_length,
        action_repeat=action_repeat,
        joint_limit_actions=joint_limit_actions,
    )
    max_steps = int(min(max_steps or episode_length, episode_length))

    record = _classic_physics if draw is not None else _physics
    rollout = jax.jit(_make_rollout(env, policy, max_steps, record))
    steps, episode_return, physics = rollout(jax.random.PRNGKey(seed))
    steps = int(steps)
    physics = {k: np.asarray(v)[: steps + 1] for k, v in physics.items()}

    if draw is not None:
        frames = draw_classic(draw, base, physics["state"], width=width, height=height)
    else:
        frames = render_frames(mj_model, physics, width=width, height=height, camera=camera_id)
    fps = _fps(base, action_repeat)
    _write_video(path, frames, fps)
    return {
        "path": str(path),
        "frames": len(frames),
        "width": width,
        "height": height,
        "fps": fps,
        "bytes": path.stat().st_size,
        "return": float(episode_return),
        "length": steps,
    }


def _check_arguments(out, width, height, max_steps, episode_length, action_repeat) -> None:
    """RenderError for a video file other than .mp4 or .gif, or a size or count that is not a
    positive integer (the counts may be None)."""
    if pathlib.Path(out).suffix.lower() not in VIDEO_SUFFIXES:
        raise RenderError(f"video file {str(out)!r} must end in .mp4 or .gif")
    for label, value in (("width", width), ("height", height)):
        if not isinstance(value, int | np.integer) or value < 1:
            raise RenderError(f"{label} must be a positive integer, got {value!r}")
    for label, value in (
        ("max_steps", max_steps),
        ("episode_length", episode_length),
        ("action_repeat", action_repeat),
    ):
        if value is not None and (not isinstance(value, int | np.integer) or value < 1):
            raise RenderError(f"{label} must be a positive integer, got {value!r}")


def _drawing(env_name: str, base: Any, camera: str | int | None) -> tuple[Any, Any, int]:
    """(draw, mj_model, camera_id): a classic task's matplotlib drawing (no MuJoCo model, no
    camera: -1), or None and the task's MjModel and the camera's id. RenderError for a task
    with neither, or a camera asked of a classic task."""
    draw = _classic_drawing(base)  # classic tasks: drawn with matplotlib, without MuJoCo
    mj_model = None if draw is not None else _mj_model(base)
    if draw is None and mj_model is None:
        raise RenderError(f"{env_name} has no MuJoCo model to render")
    if draw is not None and camera not in (None, -1):
        raise RenderError(f"{env_name} is a classic task, drawn without cameras: drop --camera")
    camera_id = -1 if draw is not None else _camera_id(mj_model, camera)
    return draw, mj_model, camera_id


def _mj_model(base: Any):
    """The MjModel of a Brax PipelineEnv (`sys.mj_model`) or a Playground MjxEnv (`mj_model`)."""
    unwrapped = getattr(base, "unwrapped", base)
    model = getattr(unwrapped, "mj_model", None)
    if model is None:
        model = getattr(getattr(unwrapped, "sys", None), "mj_model", None)
    return model


def _camera_id(mj_model, camera: str | int | None) -> int:
    import mujoco

    names = [mj_model.camera(i).name for i in range(mj_model.ncam)]
    available = (
        f"the model's cameras: {', '.join(names)} (or ids -1..{mj_model.ncam - 1}; -1 is the "
        "free camera)"
        if names
        else "the model has no camera of its own: leave --camera out for the free camera (-1)"
    )
    if camera is None:
        return -1
    if isinstance(camera, str):
        camera_id = mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_CAMERA, camera)
        if camera_id < 0:
            raise RenderError(f"no camera named {camera!r}; {available}")
        return camera_id
    if not isinstance(camera, int | np.integer) or not -1 <= camera < mj_model.ncam:
        raise RenderError(f"camera id {camera!r} out of range; {available}")
    return int(camera)


def _physics(state) -> dict[str, jax.Array]:
    """What a frame needs from a state: Brax's `pipeline_state` (q, qd) or Playground's `data`."""
    pipeline = getattr(state, "pipeline_state", None)
    if pipeline is not None:
        out = {"qpos": pipeline.q, "qvel": pipeline.qd}
        data = pipeline
    else:
        data = state.data
        out = {"qpos": data.qpos, "qvel": data.qvel}
        if hasattr(data, "xfrc_applied"):
            out["xfrc_applied"] = data.xfrc_applied
    for key in ("mocap_pos", "mocap_quat"):
        if getattr(data, key, None) is not None:
            out[key] = getattr(data, key)
    return out


def _classic_physics(state) -> dict[str, jax.Array]:
    """What a classic task's frame needs: its whole state (`pipeline_state`, a small vector)."""
    return {"state": state.pipeline_state}


def _make_rollout(
    env: Any, policy: Callable, max_steps: int, record: Callable = _physics
) -> Callable:
    """key -> (control steps taken, episode return, physics of the steps [max_steps + 1, ...]);
    entries past the steps taken are zeros. `record(state)`: what each step keeps."""

    def rollout(key):
        state = env.reset(key)
        first = record(state)
        buffer = jax.tree.map(
            lambda x: jnp.zeros((max_steps + 1, *x.shape), x.dtype).at[0].set(x), first
        )

        def running(carry):
            i, state, _, _ = carry
            return (i < max_steps) & (state.done == 0)

        def step(carry):
            i, state, buffer, total = carry
            action = policy(state.obs)
            state = env.step(state, action)
            buffer = jax.tree.map(lambda b, x: b.at[i + 1].set(x), buffer, record(state))
            return i + 1, state, buffer, total + state.reward

        carry = (jnp.zeros((), jnp.int32), state, buffer, jnp.zeros((), jnp.float32))
        steps, _, buffer, total = jax.lax.while_loop(running, step, carry)
        return steps, total, buffer

    return rollout


# -- Classic tasks (jaxrl.envs.classic): no MuJoCo model, drawn with matplotlib ---------------


def _classic_drawing(base: Any) -> str | None:
    """ "pendulum" or "mountain_car" for the classic tasks this module can draw, else None."""
    from jaxrl.envs import classic

    unwrapped = getattr(base, "unwrapped", base)
    if isinstance(unwrapped, classic.Pendulum):  # PrivilegedPendulum too
        return "pendulum"
    if isinstance(unwrapped, classic.MountainCarContinuous):
        return "mountain_car"
    return None


def draw_classic(
    kind: str, base: Any, states: np.ndarray, *, width: int, height: int
) -> list[np.ndarray]:
    """RGB frames [height, width, 3] uint8 of a classic task, one per row of `states` (its
    `pipeline_state`s [T, 2]), drawn with matplotlib: "pendulum" as a rod from the pivot at
    its angle (0: upright) with its tip; "mountain_car" as the hill (y = sin 3x), the goal flag
    and the car on the hill."""
    import matplotlib

    matplotlib.use("Agg")  # no screen: draw into memory
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    dpi = 100
    fig = Figure(figsize=(width / dpi, height / dpi), dpi=dpi, facecolor="white")
    canvas = FigureCanvasAgg(fig)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_axis_off()
    if kind == "pendulum":
        # Equal scales on both axes (a round swing in any frame shape), the rod's reach in view.
        ax.set_xlim(-1.25 * max(1.0, width / height), 1.25 * max(1.0, width / height))
        ax.set_ylim(-1.25 * max(1.0, height / width), 1.25 * max(1.0, height / width))
        (rod,) = ax.plot([0, 0], [0, 1], color="tab:red", linewidth=max(2.0, height / 30))
        (tip,) = ax.plot([0], [1], "o", color="tab:red", markersize=max(3.0, height / 15))
        ax.plot([0], [0], "o", color="black", markersize=max(2.0, height / 40))

        def update(state):
            x, y = -np.sin(state[0]), np.cos(state[0])  # th = 0 upright, as Gym draws it
            rod.set_data([0, x], [0, y])
            tip.set_data([x], [y])

    elif kind == "mountain_car":
        hill = np.linspace(-1.2, 0.6, 200)
        ax.set_xlim(-1.25, 0.65)
        ax.set_ylim(-1.2, 1.6)
        ax.plot(hill, np.sin(3 * hill), color="black", linewidth=max(1.0, height / 80))
        ax.plot([0.45, 0.45], [np.sin(1.35), np.sin(1.35) + 0.3], color="tab:green")
        (car,) = ax.plot([0], [0], "s", color="tab:blue", markersize=max(3.0, height / 15))

        def update(state):
            car.set_data([state[0]], [np.sin(3 * state[0]) + 0.05])

    else:
        raise RenderError(f"no drawing for the classic task kind {kind!r}")
    frames = []
    for state in np.asarray(states, dtype=float):
        update(state)
        canvas.draw()
        rgba = np.asarray(canvas.buffer_rgba())
        frames.append(np.ascontiguousarray(rgba[:height, :width, :3]))
    return frames


def render_frames(
    mj_model,
    physics: dict[str, np.ndarray],
    *,
    width: int,
    height: int,
    camera: int = -1,
) -> list[np.ndarray]:
    """RGB frames [height, width, 3] uint8, one per row of `physics` (qpos, qvel and optionally
    mocap_pos, mocap_quat, xfrc_applied, each [T, ...])."""
    import mujoco

    model = mj_model
    visual = model.vis.global_
    if width > visual.offwidth or height > visual.offheight:
        # The offscreen framebuffer is sized by the model; enlarge it on a copy.
        model = copy.deepcopy(mj_model)
        model.vis.global_.offwidth = max(width, visual.offwidth)
        model.vis.global_.offheight = max(height, visual.offheight)
    renderer = _renderer(model, height=height, width=width)
    frames = []
    try:
        data = mujoco.MjData(model)
        for t in range(len(physics["qpos"])):
            for key, values in physics.items():
                getattr(data, key)[...] = values[t].reshape(getattr(data, key).shape)
            mujoco.mj_forward(model, data)
            renderer.update_scene(data, camera=camera)
            frames.append(renderer.render().copy())
    finally:
        renderer.close()
    return frames


def _renderer(model, *, height: int, width: int):
    """A `mujoco.Renderer` on the backend MUJOCO_GL names. Where MUJOCO_GL is this module's
    default and no EGL context can be made, OSMesa instead (with a warning); RenderError naming
    the system packages to install where no backend works."""
    import mujoco

    current = os.environ.get("MUJOCO_GL", "").lower().strip()
    ours = not _USER_GL and platform.system() == "Linux" and current in GL_FALLBACKS
    backends = GL_FALLBACKS[GL_FALLBACKS.index(current) :] if ours else (current,)
    failures: list[tuple[str, Exception]] = []
    for backend in backends:
        if failures:
            _forget_gl_backend(failures[-1][0])
            os.environ["MUJOCO_GL"] = backend
        try:
            _ensure_gl_backend()
            renderer = mujoco.Renderer(model, height=height, width=width)
        except Exception as err:  # noqa: BLE001 - any GL failure: the next backend, or advice
            failures.append((backend, err))
            continue
        if failures:
            warnings.warn(
                f"jaxrl.render: no {GL_NAMES[failures[0][0]]} context ({failures[0][1]}); "
                f"rendering with {GL_NAMES[backend]} (MUJOCO_GL={backend}) instead",
                RuntimeWarning,
                stacklevel=3,
            )
        return renderer
    tried = "; ".join(f"MUJOCO_GL={b!r}: {type(e).__name__}: {e}" for b, e in failures)
    packages = [f"{GL_PACKAGES[b]} (for {GL_NAMES[b]})" for b, _ in failures if b in GL_PACKAGES]
    advice = (
        "install the system libraries, on Debian/Ubuntu: apt-get install " + " or ".join(packages)
        if packages
        else "without a display, use MUJOCO_GL=egl (Debian/Ubuntu packages: libegl1 "
        "libgl1-mesa-dri) or MUJOCO_GL=osmesa (libosmesa6)"
    )
    raise RenderError(f"cannot create an OpenGL context ({tried}); {advice}") from failures[-1][1]


def _forget_gl_backend(failed: str) -> None:
    """Drops what the failed backend left imported, so that the next one loads afresh: PyOpenGL
    (it binds one platform, from PYOPENGL_PLATFORM, when first imported) and mujoco's EGL and
    OSMesa modules (which set PYOPENGL_PLATFORM to their own name when imported)."""
    for name in list(sys.modules):
        if name == "OpenGL" or name.startswith(("OpenGL.", "mujoco.egl", "mujoco.osmesa")):
            del sys.modules[name]
    if os.environ.get("PYOPENGL_PLATFORM", "").lower() == failed:
        del os.environ["PYOPENGL_PLATFORM"]


def _ensure_gl_backend() -> None:
    """Makes MuJoCo's renderer use the OpenGL backend MUJOCO_GL names now.

    mujoco reads MUJOCO_GL once, when `mujoco.rendering.classic.gl_context` is first imported
    (by `import mujoco`). If that happened before MUJOCO_GL was set (e.g. before this module set
    its "egl" default), the module is re-imported so that `mujoco.Renderer` picks up the value.
    """
    from mujoco.rendering.classic import gl_context

    wanted = os.environ.get("MUJOCO_GL", "").lower().strip()
    if getattr(gl_context, "_MUJOCO_GL", wanted) != wanted:
        importlib.reload(gl_context)


def _fps(base: Any, action_repeat: int) -> float:
    """Frames per second of real time: one frame per control step of `action_repeat` env steps.
    Brax's `dt` is timestep x n_frames, Playground's is ctrl_dt; both are one env step."""
    dt = getattr(getattr(base, "unwrapped", base), "dt", None)
    try:
        dt = float(dt) * action_repeat
    except (TypeError, ValueError):
        return DEFAULT_FPS
    # Rounded: Brax's dt is a float32 (0.04 -> 25.00000056 fps).
    return round(1.0 / dt, 3) if dt > 0 else DEFAULT_FPS


def _set_ffmpeg() -> None:
    import mediapy

    try:
        import imageio_ffmpeg
    except ImportError:
        if shutil.which("ffmpeg") is None:
            raise RenderError(
                "writing video needs ffmpeg: pip install imageio-ffmpeg, or install ffmpeg"
            ) from None
        return
    mediapy.set_ffmpeg(imageio_ffmpeg.get_ffmpeg_exe())


def _write_video(path: pathlib.Path, frames: list[np.ndarray], fps: float) -> None:
    import mediapy

    _set_ffmpeg()
    path.parent.mkdir(parents=True, exist_ok=True)
    codec = "gif" if path.suffix.lower() == ".gif" else "h264"
    mediapy.write_video(path, frames, fps=fps, codec=codec)
