"""Robot-task helpers: joint-limit-aware action bounds from a task's MuJoCo model.

Playground's locomotion tasks (Go1, G1, H1, T1, Berkeley Humanoid, Spot, Barkour, Op3, ...)
set position targets `default_pose + action * action_scale`: with actions in [-1, 1] a joint
reaches only +-action_scale around its default angle, often far inside its range on one side
and past its limit on the other. The FastSAC / FastTD3 humanoid recipe bounds each action by
the joint's own limits instead (`--joint-limit-actions`, `wrappers.JointLimitActions`).
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from jaxrl.errors import EnvOptionError

# How a task must set its targets for the bounds below to mean joint limits (Playground's
# joystick tasks write exactly this; getup and handstand tasks add actions to the current
# pose, for which no fixed bound is a joint limit).
TARGET_LINE = "self._default_pose + action * self._config.action_scale"
MJ_TRN_JOINT = 0  # mujoco.mjtTrn.mjTRN_JOINT: an actuator that drives one joint


class JointLimitError(EnvOptionError):
    """A task whose actions cannot be bounded by its joints' limits."""


def joint_limit_bounds(env: Any, label: str = "the env") -> tuple[np.ndarray, np.ndarray]:
    """(low, high) per action entry: the actions that move each actuated joint from the
    task's default pose to its lower and upper limit (low <= 0 <= high; the actuator's control
    range where it is tighter). A joint without
    limits keeps the task's own [-1, 1]. Raises JointLimitError naming what is missing for a
    task that does not set its targets as `TARGET_LINE`."""
    task = getattr(env, "unwrapped", env)
    pose = getattr(task, "_default_pose", None)
    scale = getattr(getattr(task, "_config", None), "action_scale", None)
    model = getattr(task, "mj_model", None)
    try:
        source = inspect.getsource(type(task).step)
    except (OSError, TypeError):
        source = ""
    if pose is None or scale is None or model is None or TARGET_LINE not in source:
        raise JointLimitError(
            f"--joint-limit-actions: {label} does not set motor targets as "
            f"`{TARGET_LINE}` (with a MuJoCo model), so its actions have no joint-limit "
            "bounds; it works for Playground's locomotion joystick tasks (Go1, G1, H1, T1, "
            "Berkeley Humanoid, ...)"
        )
    pose = np.asarray(pose, np.float64)
    scale = np.broadcast_to(np.asarray(scale, np.float64), pose.shape)
    if (model.actuator_trntype != MJ_TRN_JOINT).any() or model.nu != env.action_size:
        raise JointLimitError(
            f"--joint-limit-actions: {label}'s {env.action_size} actions are not one actuator "
            "per joint, so they have no joint-limit bounds"
        )
    joints = model.actuator_trnid[:, 0]
    # The default pose lists the joints after the root's free joint, in qpos order.
    index = model.jnt_qposadr[joints] - (model.nq - pose.shape[0])
    if (index < 0).any() or (index >= pose.shape[0]).any():
        raise JointLimitError(
            f"--joint-limit-actions: {label}'s default pose does not cover its actuated joints"
        )
    q0, s = pose[index], scale[index]
    lower, upper = model.jnt_range[joints].T
    limited = model.jnt_limited[joints].astype(bool)
    # A position actuator's control range clips its target too: the tighter of the two.
    clipped = model.actuator_ctrllimited.astype(bool)
    ctrl_low, ctrl_high = model.actuator_ctrlrange.T
    lower = np.where(clipped & limited, np.maximum(lower, ctrl_low), lower)
    upper = np.where(clipped & limited, np.minimum(upper, ctrl_high), upper)
    low = np.where(limited, np.minimum((lower - q0) / s, 0.0), -1.0)
    high = np.where(limited, np.maximum((upper - q0) / s, 0.0), 1.0)
    return low.astype(np.float32), high.astype(np.float32)
