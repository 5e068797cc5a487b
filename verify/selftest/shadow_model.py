"""How many requests a shadow sample needs to catch a share of faults.

The model is the one behind the TokTier paper's figure (section 5.8: 434 injected token
faults, a 5% shadow sample, 90% of the faults caught within 42 requests): a fault shows
in every request that reaches it; each request is shadow-sampled independently with
probability ``sample_rate``; a sampled request exposes the fault with probability
``detection`` (the harness's measured per-request detection, the share of injected
faults it found). A fault's catch time is then geometric with
``p = sample_rate * detection``, and the requests by which a ``target`` share of
faults is caught is the ``target`` quantile of that distribution:

    exact:      the smallest n with 1 - (1 - p)**n >= target
    simulated:  the ceil(target * faults)-th smallest of ``faults`` seeded geometric draws
                (what an experiment with that many faults measures), with the 5-95%
                range of that figure over repeated experiments

With perfect detection the exact figure at 5% and 90% is 45 requests; an experiment
with 434 faults measures 41-50 (5-95%), so the paper's 42 is this model's figure.
"""

from __future__ import annotations

import math

import numpy as np

PAPER = {"faults": 434, "sample_rate": 0.05, "target": 0.9, "requests": 42,
         "kinds": ["substitute", "delete", "boundary"],
         "source": "TokTier (arXiv:2607.29678), section 5.8"}
REPEATS = 2000


def requests_to_catch(detection: float, sample_rate: float = 0.05, target: float = 0.9) -> int | None:
    """The exact figure; ``None`` when the faults are never caught (no detection)."""
    p = sample_rate * detection
    if p <= 0:
        return None
    if p >= 1:
        return 1
    return max(1, math.ceil(math.log(1 - target) / math.log(1 - p) - 1e-12))


def simulate(detection: float, faults: int, sample_rate: float = 0.05, target: float = 0.9,
             seed: int = 0, repeats: int = REPEATS) -> dict | None:
    """The figure an experiment with ``faults`` faults measures: its value for ``seed`` and
    its median and 5-95% range over ``repeats`` experiments."""
    p = sample_rate * detection
    if p <= 0 or faults <= 0:
        return None
    rng = np.random.default_rng(seed)
    draws = rng.geometric(min(p, 1.0), size=(repeats, faults))
    rank = max(1, math.ceil(target * faults)) - 1
    figures = np.partition(draws, rank, axis=1)[:, rank]
    return {"seed_experiment": int(figures[0]), "median": float(np.median(figures)),
            "range_5_95": [int(np.percentile(figures, 5)), int(np.percentile(figures, 95))],
            "faults": faults, "repeats": repeats}


def shadow_figures(found: int, injected: int, sample_rate: float = 0.05, target: float = 0.9,
                   seed: int = 0) -> dict:
    detection = found / injected if injected else 0.0
    return {"sample_rate": sample_rate, "target": target, "detection": detection,
            "per_request": sample_rate * detection,
            "requests": requests_to_catch(detection, sample_rate, target),
            "simulated": simulate(detection, injected, sample_rate, target, seed)}
