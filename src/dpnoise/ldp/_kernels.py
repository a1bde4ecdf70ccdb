"""Variants as a table: each configuration class declares its kernels once, one row per
variant, and the envelope (dpnoise.ldp._protocol.Configuration) picks the row.

    class GRR(FrequencyConfiguration, name="grr"):
        kernel_table = KernelTable(
            variable_time=Kernels(rr=_core.ldp.grr_privatize, memo_rows=_core.ldp.memo_grr),
            constant_time=Kernels(rr=_core.randomized_response_constant_time))

        def _privatize(self, rng, items, threads):
            return {"values": self.kernels.rr(native(rng), items, ...)}

Whether a class supports a variant is read from its table (a constant-time row or none), never
from a list of names; a new variant (a new kernel, shuffling) is one more row. A row also
states what its variant's privacy rule needs: the constant-time decisions per report of the
permanent layer (``draws``) and of the per-report layer (``instantaneous_draws``), each within
total variation 2^-64 of exact (dpnoise.ldp._privacy.report_loss).

Model: Arrow's compute kernels (``arrow/compute/kernels/scalar_arithmetic.cc``), where
``add_checked`` is registered beside ``add`` from one table per type.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Union

Count = Union[int, Callable[[Any], int]]
#: a kernel: a C++ function of the extension, or a function taking the configuration first
Kernel = Callable[..., Any]


class Kernels:
    """One row of a kernel table: named kernels (C++ functions, or methods of the class taking
    the configuration first) and the row's constant-time decision counts.

    Parameters
    ----------
    draws : int or callable, default 1
        Constant-time decisions of one report's (permanent) randomizer, or a function of the
        configuration giving them (read only on a constant-time row).
    instantaneous_draws : int or callable, default 1
        The same for the per-report layer of daily collection.
    **kernels
        The row's kernels by name; a name the row leaves out reads as None from :meth:`get`.
    """

    def __init__(self, *, draws: Count = 1, instantaneous_draws: Count = 1, **kernels: Any) -> None:
        self._draws = draws
        self._instantaneous_draws = instantaneous_draws
        clash = sorted(set(kernels) & set(dir(Kernels)))
        if clash:
            raise ValueError(f"kernel names must not hide the row's own attributes: {clash}")
        self._kernels: dict[str, Any] = dict(kernels)
        self.__dict__.update(kernels)  # row.name is a plain attribute: no lookup cost per call

    if TYPE_CHECKING:
        # what the checker sees of ``row.name``: the rows of one table differ in their kernel
        # names (set per instance above), so a name is typed as a kernel rather than declared
        # per class (a class-typed row would need Configuration generic over it, and a
        # ClassVar cannot hold a type variable). At run time a missing name raises
        # AttributeError as before.
        def __getattr__(self, name: str) -> Kernel: ...

    def get(self, name: str) -> Kernel | None:
        """The kernel ``name`` of this row, or None where the row has none.

        Parameters
        ----------
        name : str
            A kernel name of the table.

        Returns
        -------
        Any
            The kernel, or None.
        """
        return self._kernels.get(name)

    @staticmethod
    def _count(value: Count, config: Any) -> int:
        return int(value(config)) if callable(value) else int(value)

    def draws(self, config: Any) -> int:
        """m∞, the constant-time decisions of one report's randomizer for ``config``.

        Parameters
        ----------
        config : Configuration
            The configuration the row serves.

        Returns
        -------
        int
            At least 1.
        """
        return self._count(self._draws, config)

    def instantaneous_draws(self, config: Any) -> int:
        """m₁, the constant-time decisions of the per-report layer for ``config``.

        Parameters
        ----------
        config : Configuration
            The configuration the row serves.

        Returns
        -------
        int
            At least 1.
        """
        return self._count(self._instantaneous_draws, config)


class KernelTable:
    """A configuration class's kernels, one :class:`Kernels` row per variant.

    Parameters
    ----------
    variable_time : Kernels, optional
        The default row (exact kernels whose time may depend on the data).
    constant_time : Kernels, optional
        The constant-time row; None: the class refuses ``constant_time=True``.
    """

    def __init__(self, variable_time: Kernels | None = None, constant_time: Kernels | None = None) -> None:
        self.variable_time = Kernels() if variable_time is None else variable_time
        self.constant_time = constant_time

    def row(self, constant_time: bool) -> Kernels:
        """The row of a configuration with this ``constant_time`` flag.

        Parameters
        ----------
        constant_time : bool
            The configuration's flag (checked against :meth:`has` when it was made).

        Returns
        -------
        Kernels
        """
        if constant_time:
            assert self.constant_time is not None  # refused when the configuration was made
            return self.constant_time
        return self.variable_time

    def has(self, variant: str) -> bool:
        """Whether the table has a row for ``variant`` (``"constant_time"``).

        Parameters
        ----------
        variant : str
            A row name.

        Returns
        -------
        bool
        """
        return getattr(self, variant, None) is not None
