"""`jaxrl.render`: a policy's episode on Brax and Playground tasks written to a video, read back,
on tiny frames; the frames match the envs' own `render`; headless OpenGL; the errors."""

import json
import os
import subprocess
import sys
import textwrap
import warnings

import imageio_ffmpeg
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import envs, render
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
    "user_gl,broken,used,message",
    [
        # MUJOCO_GL unset (ours): EGL, else OSMesa, else the packages of both.
        (None, set(), "egl", None),
        (None, {"egl"}, "osmesa", None),
        (
            None,
            {"egl", "osmesa"},
            None,
            "libegl1 libgl1-mesa-dri (for EGL) or libosmesa6 (for OSMesa)",
        ),
        # Set by the user: that backend alone, its packages named on failure.
        ("egl", {"egl"}, None, "apt-get install libegl1 libgl1-mesa-dri (for EGL)"),
        ("osmesa", {"egl"}, "osmesa", None),
        ("osmesa", {"osmesa"}, None, "apt-get install libosmesa6 (for OSMesa)"),
        ("glfw", {"glfw"}, None, "or MUJOCO_GL=osmesa (libosmesa6)"),
    ],
)
def test_gl_backend_falls_back_from_egl_to_osmesa_unless_the_user_chose(
    monkeypatch, user_gl, broken, used, message
):
    """Which backends are tried, in which order, and the advice; the contexts are stubbed
    (test_falls_back_to_osmesa_when_no_egl_context_can_be_made makes real ones)."""
    import mujoco

    tried, forgotten = [], []

    def renderer(model, height, width):
        tried.append(os.environ["MUJOCO_GL"])
        if tried[-1] in broken:
            raise RuntimeError(f"no {tried[-1]} here")
        return "renderer"

    monkeypatch.setattr(mujoco, "Renderer", renderer)
    monkeypatch.setattr(render, "_ensure_gl_backend", lambda: None)
    monkeypatch.setattr(render, "_forget_gl_backend", forgotten.append)
    monkeypatch.setattr(render, "_USER_GL", user_gl or "")
    monkeypatch.setattr(render.platform, "system", lambda: "Linux")
    monkeypatch.setenv("MUJOCO_GL", user_gl or "egl")
    if message is None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert render._renderer(None, height=H, width=W) == "renderer"
        assert tried[-1] == os.environ["MUJOCO_GL"] == used
        assert len(caught) == len(forgotten) == len(tried) - 1
        if caught:
            assert "no EGL context (no egl here); rendering with OSMesa" in str(caught[0].message)
    else:
        with pytest.raises(RenderError, match="cannot create an OpenGL context") as error:
            render._renderer(None, height=H, width=W)
        assert str(error.value).endswith(message)  # the advice
        assert tried == (list(render.GL_FALLBACKS) if user_gl is None else [user_gl])
        assert all(f"MUJOCO_GL={b!r}: RuntimeError: no {b} here" in str(error.value) for b in tried)


def test_falls_back_to_osmesa_when_no_egl_context_can_be_made():
    """With no EGL vendor library (glvnd finds none), rendering falls back to OSMesa: it
    renders where libOSMesa is installed, else the error names the packages of both."""
    script = textwrap.dedent(
        """
        import ctypes.util, json, warnings
        import mujoco
        import numpy as np
        from mujoco.rendering.classic import gl_context
        from jaxrl import render
        model = mujoco.MjModel.from_xml_string(
            '<mujoco><worldbody><light pos="0 0 2"/><geom size=".1"/></worldbody></mujoco>')
        physics = {"qpos": np.zeros((1, 0)), "qvel": np.zeros((1, 0))}
        out = {"osmesa_installed": ctypes.util.find_library("OSMesa") is not None}
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                frame, = render.render_frames(model, physics, width=16, height=12)
            out["context"] = gl_context.GLContext.__module__
            out["max"] = int(frame.max())
            out["warnings"] = [str(w.message) for w in caught]
        except render.RenderError as error:
            out["error"] = str(error)
        print(json.dumps(out))
        """
    )
    env = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "PYOPENGL_PLATFORM")}
    env |= {"JAX_PLATFORMS": "cpu", "__EGL_VENDOR_LIBRARY_FILENAMES": os.devnull}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.splitlines()[-1])
    if out.get("context") == "mujoco.egl":
        pytest.skip("EGL works even without a vendor library here; nothing to fall back from")
    if out["osmesa_installed"]:
        assert out["context"] == "mujoco.osmesa" and out["max"] > 0, out
        assert any("rendering with OSMesa" in w for w in out["warnings"]), out
    else:
        assert "MUJOCO_GL='egl'" in out["error"] and "MUJOCO_GL='osmesa'" in out["error"], out
        assert "libegl1 libgl1-mesa-dri (for EGL) or libosmesa6 (for OSMesa)" in out["error"]


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"out": "episode.avi"}, "must end in .mp4 or .gif"),
        ({"width": 0}, "width must be a positive integer"),
        ({"height": -4}, "height must be a positive integer"),
        ({"max_steps": 0}, "max_steps must be a positive integer"),
        ({"env_name": "classic/pendulum", "camera": 0}, "drawn without cameras"),
        ({"camera": "nope"}, "no camera named 'nope'; the model has no camera of its own: leave"),
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


# -- Classic tasks: no MuJoCo model, drawn with matplotlib ----------------------------------


def _red(frame: np.ndarray) -> np.ndarray:
    """(row, column) of the pixels of the pendulum's rod (red) in a frame."""
    r, g, b = (frame[..., i].astype(int) for i in range(3))
    return np.argwhere((r > 150) & (g < 110) & (b < 110))


def test_classic_pendulum_is_drawn_at_its_angle():
    # Upright (th = 0), hanging (th = pi), and a quarter turn (th = pi/2: to the left, as Gym).
    states = np.array([[0.0, 0.0], [np.pi, 0.0], [np.pi / 2, 0.0]])
    frames = render.draw_classic("pendulum", None, states, width=W, height=H)
    assert [f.shape for f in frames] == [(H, W, 3)] * 3 and frames[0].dtype == np.uint8
    centre_row, centre_col = H / 2, W / 2
    up, down, left = (_red(f).mean(axis=0) for f in frames)
    assert up[0] < centre_row - 5 and abs(up[1] - centre_col) < 3
    assert down[0] > centre_row + 5 and abs(down[1] - centre_col) < 3
    assert left[1] < centre_col - 5 and abs(left[0] - centre_row) < 3


def test_renders_a_classic_pendulum_episode_without_mujoco(tmp_path):
    out = tmp_path / "videos" / "pendulum.mp4"
    result = render_policy(
        "classic/pendulum", {}, lambda obs: jnp.zeros(1), out, max_steps=STEPS, width=W, height=H
    )
    assert result["frames"] == STEPS + 1 and result["length"] == STEPS
    assert result["fps"] == pytest.approx(20.0)  # dt 0.05
    assert np.isfinite(result["return"]) and result["return"] < 0
    video, fps = _read_video(out)
    assert video.shape == (STEPS + 1, H, W, 3) and fps == pytest.approx(20.0, rel=1e-3)
    assert _pixels_moved(video) >= 15  # it swings from its random start
    # Mountain car too: the car on its hill.
    car = render_policy(
        "classic/mountain_car_continuous",
        {},
        lambda obs: jnp.ones(1),
        tmp_path / "car.gif",
        max_steps=5,
        width=W,
        height=H,
    )
    assert car["frames"] == 6 and _read_video(tmp_path / "car.gif")[0].shape == (6, H, W, 3)
