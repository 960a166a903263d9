"""Learning α and τ from the training loop itself (docs/ALGORITHM.md, "Learning α and τ").

The Python port of the library's TypeScript learner (`src/learn/`): the same default gain
y = 4·p̂(1 − p̂), the same exact gradient of J = Σ w·y in log space, the same Adam (or clipped
SGD) step and the same clamps α ∈ [1e−3, 1e3], τ ∈ [1e−2, 1e2]. A test runs both on one recorded
sequence of scores and gains and holds every step to 1e-12.

    state = create_learn_state()                                  # α = 1, τ = 0.5
    plan = ta.plan(total_budget=..., scores=True)                 # weight, gradAlpha, gradTau per node
    ... run the rollouts the plan placed ...
    gains = outcome_variance_gains(parent, new_rollouts, new_reward_sum)
    state = learn_step(state, parent, weight, grad_alpha, grad_tau, gains).state
    ta.set_params(alpha=state.alpha, tau=state.tau)

Arrays run over the rows of one or more trees (trees one after another, roots with parent −1).
`LearnState.to_json()` is the TypeScript `LearnState` as JSON, so a checkpoint moves between both.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Optional, Tuple

import numpy as np

from ._errors import TraceAllocError

ALPHA_RANGE: Tuple[float, float] = (1e-3, 1e3)
TAU_RANGE: Tuple[float, float] = (1e-2, 1e2)
#: A child needs at least this many new finished rollouts in its subtree to get a gain.
MIN_NEW_ROLLOUTS = 2
#: The range `set_params` and the service accept for α and τ (a fresh state is then clamped).
PARAM_RANGE: Tuple[float, float] = (1e-300, 1e300)


def _option_error(field_name: str, why: str) -> TraceAllocError:
    return TraceAllocError("invalid_options", 'learn option "%s": %s' % (field_name, why), field=field_name)


@dataclass(frozen=True)
class LearnOptions:
    """How α and τ are ascended (the TypeScript `LearnOptions`, snake_case)."""
    optimizer: str = "adam"  # "adam" or "sgd" (plain ascent, each log-step clipped to max_step)
    learning_rate: float = 0.05  # step size in log space
    beta1: float = 0.9
    beta2: float = 0.999
    epsilon: float = 1e-8
    max_step: float = 0.5  # sgd only: the largest change of ln α or ln τ in one step

    def __post_init__(self) -> None:
        if self.optimizer not in ("adam", "sgd"):
            raise _option_error("optimizer", 'must be "adam" or "sgd", got %r' % (self.optimizer,))
        if not (_finite(self.learning_rate) and self.learning_rate > 0):
            raise _option_error("learning_rate", "must be a finite number > 0, got %r" % (self.learning_rate,))
        if not (_number(self.beta1) and 0 <= self.beta1 < 1):
            raise _option_error("beta1", "must be in [0, 1), got %r" % (self.beta1,))
        if not (_number(self.beta2) and 0 <= self.beta2 < 1):
            raise _option_error("beta2", "must be in [0, 1), got %r" % (self.beta2,))
        if not (_finite(self.epsilon) and self.epsilon > 0):
            raise _option_error("epsilon", "must be a finite number > 0, got %r" % (self.epsilon,))
        if not (_finite(self.max_step) and self.max_step > 0):
            raise _option_error("max_step", "must be a finite number > 0, got %r" % (self.max_step,))

    def to_json(self) -> dict:
        return {"optimizer": self.optimizer, "learningRate": self.learning_rate, "beta1": self.beta1,
                "beta2": self.beta2, "epsilon": self.epsilon, "maxStep": self.max_step}

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> "LearnOptions":
        """The TypeScript options object (camelCase; missing fields take the defaults)."""
        names = {"optimizer": "optimizer", "learningRate": "learning_rate", "beta1": "beta1", "beta2": "beta2",
                 "epsilon": "epsilon", "maxStep": "max_step"}
        return cls(**{names[k]: v for k, v in value.items() if k in names})


@dataclass(frozen=True)
class LearnState:
    """Everything a training job carries from one step to the next: a = ln α, b = ln τ, Adam's
    moments of (a, b) and the number of steps taken (steps without a gain are not counted)."""
    a: float
    b: float
    m: Tuple[float, float] = (0.0, 0.0)
    v: Tuple[float, float] = (0.0, 0.0)
    t: int = 0
    options: LearnOptions = field(default_factory=LearnOptions)
    version: int = 1

    @property
    def alpha(self) -> float:
        return math.exp(self.a)

    @property
    def tau(self) -> float:
        return math.exp(self.b)

    def to_json(self) -> dict:
        """The TypeScript `LearnState` (`JSON.stringify` of it reads back here, and the other way)."""
        return {"version": 1, "a": self.a, "b": self.b, "m": list(self.m), "v": list(self.v), "t": self.t,
                "options": self.options.to_json()}

    @classmethod
    def from_json(cls, value: Any) -> "LearnState":
        """Validates a parsed checkpoint as `learnStateFromJson` does."""
        def fail(name: str, why: str) -> TraceAllocError:
            return TraceAllocError("invalid_value", 'learn state field "%s": %s' % (name, why), field=name)

        if not isinstance(value, Mapping):
            raise fail("(root)", "must be an object")
        if value.get("version") != 1:
            raise fail("version", "must be 1, got %r" % (value.get("version"),))

        def num(name: str, x: Any) -> float:
            if not _finite(x):
                raise fail(name, "must be a finite number, got %r" % (x,))
            return float(x)

        def pair(name: str, x: Any) -> Tuple[float, float]:
            if not isinstance(x, (list, tuple)) or len(x) != 2:
                raise fail(name, "must be an array of 2 numbers")
            return num(name + "[0]", x[0]), num(name + "[1]", x[1])

        a, b = num("a", value.get("a")), num("b", value.get("b"))
        if a < math.log(ALPHA_RANGE[0]) - 1e-12 or a > math.log(ALPHA_RANGE[1]) + 1e-12:
            raise fail("a", "ln α must be within ln [1e-3, 1e3], got %r" % a)
        if b < math.log(TAU_RANGE[0]) - 1e-12 or b > math.log(TAU_RANGE[1]) + 1e-12:
            raise fail("b", "ln τ must be within ln [1e-2, 1e2], got %r" % b)
        v = pair("v", value.get("v"))
        if v[0] < 0 or v[1] < 0:
            raise fail("v", "second moments must be >= 0")
        t = num("t", value.get("t"))
        if t != int(t) or t < 0:
            raise fail("t", "must be an integer >= 0, got %r" % t)
        options = value.get("options") or {}
        if not isinstance(options, Mapping):
            raise fail("options", "must be an object")
        return cls(a=a, b=b, m=pair("m", value.get("m")), v=v, t=int(t), options=LearnOptions.from_json(options))


@dataclass(frozen=True)
class Gains:
    """Per row: `value` y_i (float64, (n,)) and `has` (bool, (n,)): whether the row got a gain."""
    value: np.ndarray
    has: np.ndarray


@dataclass(frozen=True)
class ObjectiveGradient:
    objective: float  # J = Σ w·y over the children with a gain
    d_a: float  # ∂J/∂ln α = Σ w·y·gA
    d_b: float  # ∂J/∂ln τ = Σ w·y·gB
    count: int  # children with a gain (0: the step carries no signal)


@dataclass(frozen=True)
class LearnStepResult:
    state: LearnState  # the state to carry into the next training step
    gradient: ObjectiveGradient
    stepped: bool  # False when no child had a gain (the state is returned unchanged)


def create_learn_state(alpha: float = 1.0, tau: float = 0.5, options: Optional[LearnOptions] = None) -> LearnState:
    """A fresh state at (α, τ), each in [1e−300, 1e300], clamped into the learning ranges."""
    for name, x in (("alpha", alpha), ("tau", tau)):
        if not (_finite(x) and PARAM_RANGE[0] <= x <= PARAM_RANGE[1]):
            raise TraceAllocError("invalid_options", "%s must be a number in [1e-300, 1e300], got %r" % (name, x),
                                  field=name)
    return LearnState(a=_clamp_log(math.log(alpha), ALPHA_RANGE), b=_clamp_log(math.log(tau), TAU_RANGE),
                      options=options or LearnOptions())


def outcome_variance_gains(parent: Any, new_rollouts: Any, new_reward_sum: Any) -> Gains:
    """The default gain y_i = 4·p̂_i(1 − p̂_i) of every non-root row whose subtree received at
    least 2 new finished rollouts, p̂ their mean reward (rewards in [0, 1]).

    `parent` (n,): −1 for roots; `new_rollouts` (n,): new finished rollouts through each row,
    integers ≥ 0; `new_reward_sum` (n,): the sum of their rewards, in [0, new_rollouts]."""
    parent = np.asarray(parent)
    count = np.asarray(new_rollouts, dtype=np.float64)
    total = np.asarray(new_reward_sum, dtype=np.float64)
    n = parent.shape[0]
    for name, a in (("new_rollouts", count), ("new_reward_sum", total)):
        if a.shape != (n,):
            raise TraceAllocError("invalid_value", 'field "%s": has shape %s, expected (%d,) (one per node)'
                                  % (name, a.shape, n), field=name)
    bad = np.flatnonzero(~np.isfinite(count) | (count < 0) | (count != np.floor(count)))
    if bad.size:
        i = int(bad[0])
        raise TraceAllocError("invalid_value", 'node %d, field "new_rollouts": must be an integer >= 0, got %r'
                              % (i, float(count[i])), node=i, field="new_rollouts")
    # A tolerance for sums accumulated in floating point; the mean is clamped below.
    bad = np.flatnonzero(~np.isfinite(total) | (total < -1e-9) | (total > count + 1e-9))
    if bad.size:
        i = int(bad[0])
        raise TraceAllocError("invalid_value", 'node %d, field "new_reward_sum": must be in [0, new_rollouts = %r] '
                              "(rewards in [0, 1]), got %r" % (i, float(count[i]), float(total[i])), node=i,
                              field="new_reward_sum")
    has = (parent >= 0) & (count >= MIN_NEW_ROLLOUTS)
    value = np.zeros(n, dtype=np.float64)
    p = np.clip(total[has] / count[has], 0.0, 1.0)
    value[has] = 4 * p * (1 - p)
    return Gains(value=value, has=has)


def objective_gradient(parent: Any, weight: Any, grad_alpha: Any, grad_tau: Any, gains: Gains) -> ObjectiveGradient:
    """J = Σ w·y and its exact gradient Σ w·y·gA, Σ w·y·gB over the non-root rows with a gain.

    `weight`, `grad_alpha`, `grad_tau` (n,): the plan's scores (`weight`, `gradAlpha`, `gradTau`)
    for the rows, at the parameters that placed the rollouts."""
    parent = np.asarray(parent)
    w, ga, gb = (np.asarray(x, dtype=np.float64) for x in (weight, grad_alpha, grad_tau))
    n = parent.shape[0]
    if not (w.shape == ga.shape == gb.shape == gains.value.shape == gains.has.shape == (n,)):
        raise TraceAllocError("invalid_value", "scores (%d rows) and gains (%d rows) must both match the %d nodes"
                              % (w.shape[0], gains.value.shape[0], n))
    rows = np.flatnonzero(gains.has & (parent >= 0))
    wy = w[rows] * gains.value[rows]
    # Summed in row order, one after another, as the TypeScript reference sums (cumsum is sequential).
    return ObjectiveGradient(objective=_sum_in_order(wy), d_a=_sum_in_order(wy * ga[rows]),
                             d_b=_sum_in_order(wy * gb[rows]), count=int(rows.size))


def ascend(state: LearnState, d_a: float, d_b: float) -> LearnState:
    """One bounded ascent step on J with gradient (d_a, d_b) in log space; returns a new state.
    α and τ are clamped to [1e−3, 1e3] and [1e−2, 1e2]."""
    if not (_finite(d_a) and _finite(d_b)):
        raise TraceAllocError("invalid_value", "gradient must be finite, got dA = %r, dB = %r" % (d_a, d_b),
                              field="gradient")
    o = state.options
    t = state.t + 1
    m, v = state.m, state.v
    if o.optimizer == "adam":
        m = (o.beta1 * m[0] + (1 - o.beta1) * d_a, o.beta1 * m[1] + (1 - o.beta1) * d_b)
        v = (o.beta2 * v[0] + (1 - o.beta2) * d_a * d_a, o.beta2 * v[1] + (1 - o.beta2) * d_b * d_b)
        c1, c2 = 1 - math.pow(o.beta1, t), 1 - math.pow(o.beta2, t)
        step_a = (o.learning_rate * m[0] / c1) / (math.sqrt(v[0] / c2) + o.epsilon)
        step_b = (o.learning_rate * m[1] / c1) / (math.sqrt(v[1] / c2) + o.epsilon)
    else:
        step_a = _clip(o.learning_rate * d_a, o.max_step)
        step_b = _clip(o.learning_rate * d_b, o.max_step)
    return replace(state, a=_clamp_log(state.a + step_a, ALPHA_RANGE), b=_clamp_log(state.b + step_b, TAU_RANGE),
                   m=m, v=v, t=t)


def learn_step(state: LearnState, parent: Any, weight: Any, grad_alpha: Any, grad_tau: Any,
               gains: Gains) -> LearnStepResult:
    """The gradient from the scores that placed this step's rollouts and the gains they produced,
    then one bounded ascent step (unchanged when no child had a gain)."""
    gradient = objective_gradient(parent, weight, grad_alpha, grad_tau, gains)
    if gradient.count == 0:
        return LearnStepResult(state, gradient, False)
    return LearnStepResult(ascend(state, gradient.d_a, gradient.d_b), gradient, True)


def _sum_in_order(x: np.ndarray) -> float:
    return float(np.cumsum(x)[-1]) if x.size else 0.0


def _clamp_log(x: float, bounds: Tuple[float, float]) -> float:
    return min(math.log(bounds[1]), max(math.log(bounds[0]), x))


def _clip(x: float, limit: float) -> float:
    return max(-limit, min(limit, x))


def _number(x: Any) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


def _finite(x: Any) -> bool:
    return _number(x) and math.isfinite(float(x))
