"""`jaxrl.render`: a policy's episode on Brax and Playground tasks written to a video, read back,
on tiny frames; the frames match the envs' own `render`; headless OpenGL; the errors."""

import os
import subprocess
import sys
import textwrap

import imageio_ffmpeg
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from jaxrl import render
from jaxrl.render import RenderError, render_policy

W, H = 64, 48
STEPS = 20


def _read_video(path) -> tuple[np.ndarray, float]:
    """Frames [T, H, W, 3] and fps. Not mediapy.read_video: mediapy 1.2.7 passes ffmpeg's
    `-vsync`, which the FFmpeg 9 binary of imageio-ffmpeg no longer accepts (writing is fine)."""
    reader = imageio_ffmpeg.read_frames(str(path))
    meta = next(reader)
    width, height = meta["size"]
    frames = [np.frombuffer(b, np.uint8).reshape(height, width, 3) for b in reader]
    return np.stack(frames), meta["fps"]


def _pixels_moved(video: np.ndarray) -> int:
    """Pixels whose colour differs by more than 40 levels between the first and last frame (the
    codec's noise between consecutive near-identical frames stays at 0-2 such pixels)."""
    diff = np.abs(video[0].astype(int) - video[-1].astype(int)).max(axis=-1)
    return int((diff > 40).sum())


# Each policy moves the system for all STEPS steps: on brax/inverted_pendulum, a constant push
# tips the pole past its 0.2 rad limit within a few steps, so the policy balances the pole
# (PD on angle and angular velocity) while a bias drives the cart sideways.
CASES = {
    "brax/inverted_pendulum": (
        lambda obs: jnp.clip(20.0 * obs[1] + 3.0 * obs[3] + 1.0, -3.0, 3.0)[None],
        25.0,
    ),
    "playground/CartpoleBalance": (lambda obs: jnp.ones(1), 100.0),
}


@pytest.mark.parametrize("name", list(CASES))
def test_renders_an_episode_to_mp4(name, tmp_path):
    policy, fps = CASES[name]
    out = tmp_path / "videos" / "episode.mp4"  # the folder does not exist yet
    result = render_policy(name, {}, policy, out, max_steps=STEPS, width=W, height=H)
    assert result["path"] == str(out)
    assert result["bytes"] == out.stat().st_size > 0
    assert (result["width"], result["height"]) == (W, H)
    assert result["length"] == STEPS  # neither policy ends the episode early
    assert result["frames"] == STEPS + 1  # the initial state, then one per control step
    assert result["fps"] == pytest.approx(fps)
    assert np.isfinite(result["return"]) and result["return"] > 0
    video, video_fps = _read_video(out)
    assert video.shape == (result["frames"], H, W, 3)
    assert video_fps == pytest.approx(fps, rel=1e-3)
    assert _pixels_moved(video) >= 15


def test_stops_when_the_episode_ends_and_honours_action_repeat(tmp_path):
    # A constant push tips the pendulum over (done) after a few steps.
    push = lambda obs: jnp.full((1,), 0.3)
    once = render_policy(
        "brax/inverted_pendulum", {}, push, tmp_path / "a.gif", max_steps=STEPS, width=W, height=H
    )
    assert 1 < once["length"] < STEPS and once["frames"] == once["length"] + 1
    assert once["return"] == pytest.approx(once["length"])  # reward 1 per step, the fall too
    video, _ = _read_video(tmp_path / "a.gif")
    assert video.shape == (once["frames"], H, W, 3)
    repeated = render_policy(
        "brax/inverted_pendulum",
        {},
        push,
        tmp_path / "b.mp4",
        max_steps=STEPS,
        width=W,
        height=H,
        action_repeat=2,
    )
    assert repeated["fps"] == pytest.approx(once["fps"] / 2)
    assert repeated["length"] < once["length"]  # the same fall in fewer, longer control steps
    assert repeated["return"] > repeated["length"]  # rewards summed over the repeated steps


@pytest.mark.parametrize("name", list(CASES))
def test_frames_match_the_envs_own_render(name):
    """Same pixels as Brax's PipelineEnv.render / Playground's MjxEnv.render for the same states."""
    base = envs.make(name)
    step = jax.jit(base.step)
    states = [jax.jit(base.reset)(jax.random.PRNGKey(0))]
    for _ in range(3):
        states.append(step(states[-1], jnp.ones(base.action_size)))
    physics = [render._physics(s) for s in states]
    physics = {k: np.stack([np.asarray(p[k]) for p in physics]) for k in physics[0]}
    ours = render.render_frames(render._mj_model(base), physics, width=W, height=H)
    if name.startswith("brax/"):
        theirs = base.render([s.pipeline_state for s in states], height=H, width=W)
    else:
        theirs = base.unwrapped.render(states, height=H, width=W)
    np.testing.assert_array_equal(np.stack(ours), np.stack(theirs))
    assert np.abs(ours[0].astype(int) - ours[-1]).max() > 0


def test_switches_to_egl_when_mujoco_was_imported_first(tmp_path):
    """MUJOCO_GL unset when mujoco is imported (GLFW, which needs a display) and no display:
    rendering still works, because render re-reads MUJOCO_GL (default "egl") before rendering."""
    script = textwrap.dedent(
        """
        import mujoco
        import numpy as np
        from mujoco.rendering.classic import gl_context
        assert gl_context._MUJOCO_GL == "", gl_context._MUJOCO_GL
        from jaxrl import render
        model = mujoco.MjModel.from_xml_string(
            '<mujoco><worldbody><light pos="0 0 2"/><geom size=".1"/></worldbody></mujoco>')
        physics = {"qpos": np.zeros((1, 0)), "qvel": np.zeros((1, 0))}
        frame, = render.render_frames(model, physics, width=16, height=12)
        assert frame.shape == (12, 16, 3) and frame.max() > 0
        print(type(gl_context.GLContext).__module__, gl_context.GLContext.__module__)
        """
    )
    env = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "DISPLAY")}
    env["JAX_PLATFORMS"] = "cpu"
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "mujoco.egl" in done.stdout


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"out": "episode.avi"}, "must end in .mp4 or .gif"),
        ({"width": 0}, "width must be a positive integer"),
        ({"height": -4}, "height must be a positive integer"),
        ({"max_steps": 0}, "max_steps must be a positive integer"),
        ({"env_name": "classic/pendulum"}, "no MuJoCo model"),
        ({"camera": "nope"}, "no camera named 'nope'"),
        ({"camera": 7}, "camera id 7 out of range"),
    ],
)
def test_errors(kwargs, message, tmp_path):
    args = {
        "env_name": "brax/inverted_pendulum",
        "env_options": {},
        "policy": lambda obs: jnp.zeros(1),
        "out": tmp_path / "episode.mp4",
        "width": W,
        "height": H,
        "max_steps": 2,
        **kwargs,
    }
    with pytest.raises(RenderError, match=message):
        render_policy(**args)
    assert not list(tmp_path.iterdir())  # nothing written
