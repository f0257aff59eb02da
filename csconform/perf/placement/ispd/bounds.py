"""Lower bounds on the slowest kernel's time of an ISPD 2020 instance: how far from optimal a solution is.

:func:`area_lower_bound` is the README's bound, sum over convolutions of ``3 H W C K R S / (T U)``
divided by the fabric area.  :func:`shape_lower_bound` is the smallest time at which every kernel
has a legal shape and their least areas fit the fabric.  :func:`gp_lower_bound` is a tighter one from
cvxpy: the continuous relaxation of the same problem (ceilings dropped, parameters real), which
keeps the ``c + 1`` rows, the block's shared height and the memory limit, as a geometric program.
"""

from __future__ import annotations

import numpy as np

from csconform.errors import InfeasibleError, PlacementError
from csconform.perf.placement.bisection import bisect_time
from csconform.perf.placement.ispd.cost import ShapeCatalogue, least_areas, shape_grid
from csconform.perf.placement.ispd.instance import Instance
from csconform.perf.placement.ispd.time_limit import Clock

GP_BOUND_S_PER_KERNEL = 3e-3
"""Time cvxpy takes to build and solve the relaxation, per kernel (measured: 1.7 s for 1,000
kernels, 12.5 s for 5,000, on two cores); it is computed only when the time left covers this."""


def area_lower_bound(instance: Instance) -> float:
    """README: every convolution needs area >= 3 H W C K R S / (T U t); the areas share the fabric."""
    total = sum(conv.area_time for kernel in instance.kernels for conv in kernel.convolutions)
    return total / (instance.width * instance.height)


def gp_lower_bound(instance: Instance, time_limit_s: float = 30.0) -> float:
    """Continuous relaxation, a geometric program, solved by cvxpy in its convex (logarithmic) form.

    Ceilings are dropped (ceil(x) >= x) and parameters are real; kept are the c + 1 rows, the shared
    height of a block, the memory limit, the sides within the fabric, and the total area.  Any legal
    solution, with each parameter clamped to where it stops mattering (h <= H, c <= C, ...), is
    feasible here, so the optimum bounds every legal slowest time from below.

    In the logarithms of its variables a geometric program is convex: monomial constraints become
    linear and posynomial ones log-sum-exp.  Written that way with one vector per parameter (a
    kernel's ``h, w, c_max``, a convolution's ``c, k``), cvxpy compiles a few large constraints,
    far faster than its ``gp=True`` path, which compiles one sum per convolution.
    """
    import cvxpy as cp  # only here: importing it costs a second, which a short time limit cannot spare

    longest = max(instance.width, instance.height)
    kernels = instance.kernels
    convs = [conv for kernel in kernels for conv in kernel.convolutions]
    owner = np.repeat(np.arange(len(kernels)), [len(kernel.convolutions) for kernel in kernels])
    member = (owner[None, :] == np.arange(len(kernels))[:, None]).astype(float)  # kernel x convolution

    def log_of_convolutions(key: str) -> np.ndarray:
        return np.log([float(getattr(conv, key)) for conv in convs])

    def log_kernel_max(key: str) -> np.ndarray:
        return np.log([float(max(getattr(conv, key) for conv in kernel.convolutions)) for kernel in kernels])

    H, W, R, S, C, K, T, U = (log_of_convolutions(key) for key in ("H", "W", "R", "S", "C", "K", "T", "U"))
    halo = np.log([float((conv.W + conv.S - 1) * (conv.H + conv.R - 1)) for conv in convs])  # input tile
    # the logarithms of the relaxation's positive variables
    log_slowest = cp.Variable()
    log_area, log_width = cp.Variable(len(kernels)), cp.Variable(len(kernels))
    log_h, log_w, log_c_max = cp.Variable(len(kernels)), cp.Variable(len(kernels)), cp.Variable(len(kernels))
    log_c, log_k = cp.Variable(len(convs)), cp.Variable(len(convs))
    log_image = log_h[owner] + log_w[owner]  # log(h w) of each convolution's kernel
    log_height = log_h + log_w + cp.logistic(log_c_max)  # log(h w (c_max + 1))
    constraints = [
        cp.log_sum_exp(log_area) <= np.log(instance.width * instance.height),
        log_h >= 0,
        log_w >= 0,
        log_c >= 0,
        log_k >= 0,
        log_h <= log_kernel_max("H"),
        log_w <= log_kernel_max("W"),
        log_c_max <= log_kernel_max("C"),
        log_c <= C,
        log_k <= K,
        log_c <= log_c_max[owner],
        member @ cp.exp(np.log(3) + log_k - log_width[owner]) <= 1,  # width >= 3 * (sum of k)
        log_height <= np.log(longest),
        log_width <= np.log(longest),
        H + W + C + K + R + S - T - U - log_image - log_c - log_k <= log_slowest,  # steps / (h w c k)
        cp.log_sum_exp(  # memory: C K R S / (c k) + (W + S - 1) (H + R - 1) K / (w h k)
            cp.vstack([C + K + R + S - log_c - log_k, halo + K - log_image - log_k]), axis=0
        )
        <= np.log(instance.memlimit),
        log_height + log_width <= log_area,
    ]
    problem = cp.Problem(cp.Minimize(log_slowest), constraints)
    try:
        problem.solve(solver=cp.CLARABEL, time_limit=time_limit_s)
    except cp.error.SolverError as error:
        raise PlacementError(f"{instance.source}: the relaxation's solver failed: {error}") from error
    if problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or log_slowest.value is None:
        raise PlacementError(f"{instance.source}: the continuous relaxation ended {problem.status}")
    return float(np.exp(log_slowest.value)) * (1 - 1e-6)  # interior-point slack: never overstate a bound


def shape_lower_bound(instance: Instance, catalogue: ShapeCatalogue | None = None, clock: Clock | None = None) -> float:
    """Smallest t at which every kernel has a legal shape and their least areas fit the fabric area.

    The shape grid holds, up to dominance, every legal execution parameter set, so this bounds
    every legal solution; it is never below the README's bound and shows how much of the gap to
    that bound is forced by the ceilings, the ``c + 1`` rows and the memory limit. When ``clock``
    runs out the bisection stops: its lower end is still a bound, only a weaker one.
    """
    if catalogue is None:
        longest = max(instance.width, instance.height)
        catalogue = ShapeCatalogue.of([shape_grid(kernel, instance.memlimit, longest) for kernel in instance.kernels])
    capacity = instance.width * instance.height

    def fits(target: float) -> bool:
        return float(least_areas(catalogue, target, instance.width, instance.height).sum()) <= capacity

    low = area_lower_bound(instance)
    high = max(low, 1.0)
    while not fits(high):
        low, high = high, high * 2
        if high > 1e18:
            raise InfeasibleError(f"{instance.source}: the kernels do not fit the fabric at any time")
        if clock is not None:
            clock.require("bounding the slowest kernel's time")

    def out_of_time() -> bool:
        return clock is not None and clock.expired(clock.bound_share)

    return bisect_time(fits, low, high, relative_tolerance=1e-6, stop=out_of_time)[0]
