"""Kubernetes ``resource.Quantity``, exact: the same inputs parse, the same strings come out.

Every quantity the API accepts is a whole number of nano-units once parsed (upstream rounds
anything finer up to ``1n``), so a :class:`Quantity` holds one Python ``int`` of nano-units
plus the format it was written in. That makes arithmetic and comparison plain integer
operations, with no floats anywhere, and gives no int64 overflow.

What upstream does, and so do we (``k8s.io/apimachinery/pkg/api/resource``):

* The grammar is upstream's scanner: ``[+-]? digits [. digits] suffix``, where the suffix is a
  decimal SI one (``n u m "" k M G T P E``), a binary one (``Ki`` ... ``Ei``) or an exponent
  (``e3``, ``E-3``). Its odd corners too: ``"1."``, ``".5"``, ``"+1"``, ``"1.G"`` parse, and
  so do ``"."``, ``"-"`` and ``"Ki"`` (as zero).
* Values finer than ``1n`` round up, away from zero; a binary-SI value is capped at
  ``2^63-1``; a binary-SI value between 0 and 1 switches to decimal SI.
* ``str()`` is ``String()``/``CanonicalizeBytes``: the largest suffix that loses nothing and
  leaves no fraction (``"1.5" -> "1500m"``, ``"1.5Gi" -> "1536Mi"``, ``"2048Mi" -> "2Gi"``);
  binary SI values under 1024 or not whole are written in decimal SI.
* The format of ``a + b`` / ``a - b`` is ``a``'s, unless ``a`` is zero (then ``b``'s).
* What the API server writes back for a quantity it was sent (:func:`serialize`) is
  ``MarshalJSON`` after ``UnmarshalJSON``: the canonical form, except that upstream's parser
  keeps the text as given when its fast path judges it canonical already, with the quirks of
  that judgement (``"+1"``, ``"012"`` and ``"1.G"`` come back as sent).

Where we differ, deliberately:

* Decimal-SI values past ``E`` and binary-SI values past ``Ei`` print in exponent form
  (``"1e21"``) where released upstream drops the suffix and prints ``"1"``; newer upstream
  does the same as we do. Exponents beyond int32 are rejected instead of wrapped.
* Inputs whose value reaches ``10**1000`` or that carry more than 4000 significant digits are
  rejected (upstream accepts them and pays with unbounded big-number work): they are never
  sensible resource amounts, and refusing them keeps a hostile manifest from stalling us.
* ``value()``/``milli_value()`` return exact Python ints; upstream wraps at int64.
"""

from __future__ import annotations

import enum
import functools
import json
import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Final

__all__ = [
    "ERR_FORMAT_WRONG",
    "ERR_NUMERIC",
    "ERR_SUFFIX",
    "ERR_TOO_LARGE",
    "Format",
    "Quantity",
    "QuantityError",
    "parse_quantity",
    "read_quantity",
    "serialize",
]

SPLIT_RE_STRING: Final = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"

# Upstream's error texts, word for word: clients and humans match on them.
ERR_FORMAT_WRONG: Final = f"quantities must match the regular expression '{SPLIT_RE_STRING}'"
ERR_NUMERIC: Final = "unable to parse numeric part of quantity"
ERR_SUFFIX: Final = "unable to parse quantity's suffix"
# Ours: see the module docstring.
ERR_TOO_LARGE: Final = "quantity is too large or too precise"


class QuantityError(ValueError):
    """A quantity that does not parse; the message gives upstream's reason and the input.

    ``reason`` is upstream's text alone (for building ``Invalid value: ...`` field errors),
    ``value`` the offending input, ``resource`` the resource name when known.
    """

    def __init__(
        self, value: object, reason: str = ERR_FORMAT_WRONG, *, resource: str | None = None
    ) -> None:
        self.value = value
        self.reason = reason
        self.resource = resource
        shown = json.dumps(value) if isinstance(value, str) else repr(value)
        prefix = f"{resource}: " if resource is not None else ""
        super().__init__(f"{prefix}{reason}: {shown}")

    def for_resource(self, resource: str) -> QuantityError:
        """The same error, naming the resource it was given for."""
        return QuantityError(self.value, self.reason, resource=resource)


class Format(enum.Enum):
    """How a quantity is written; the values are upstream's names."""

    DECIMAL_SI = "DecimalSI"  # 12M  (12 * 10^6)
    BINARY_SI = "BinarySI"  # 12Mi (12 * 2^20)
    DECIMAL_EXPONENT = "DecimalExponent"  # 12e6


_NANO: Final = 10**9
_MAX_INT64: Final = 2**63 - 1
_BINARY_CAP_NANOS: Final = _MAX_INT64 * _NANO
_MAX_EXPONENT: Final = 2**31 - 1
_MAX_SIG_DIGITS: Final = 4000  # Python refuses str->int past 4300 digits by default
_MAX_NANO_DIGITS: Final = 1009  # values below 10**1000 units
_MAX_NANOS: Final = 10**_MAX_NANO_DIGITS

# suffix -> (base, exponent, format), as upstream's suffixer interprets them.
_SUFFIXES: Final[dict[str, tuple[int, int, Format]]] = {
    "": (10, 0, Format.DECIMAL_SI),
    "n": (10, -9, Format.DECIMAL_SI),
    "u": (10, -6, Format.DECIMAL_SI),
    "m": (10, -3, Format.DECIMAL_SI),
    "k": (10, 3, Format.DECIMAL_SI),
    "M": (10, 6, Format.DECIMAL_SI),
    "G": (10, 9, Format.DECIMAL_SI),
    "T": (10, 12, Format.DECIMAL_SI),
    "P": (10, 15, Format.DECIMAL_SI),
    "E": (10, 18, Format.DECIMAL_SI),
    "Ki": (2, 10, Format.BINARY_SI),
    "Mi": (2, 20, Format.BINARY_SI),
    "Gi": (2, 30, Format.BINARY_SI),
    "Ti": (2, 40, Format.BINARY_SI),
    "Pi": (2, 50, Format.BINARY_SI),
    "Ei": (2, 60, Format.BINARY_SI),
}
_DECIMAL_SUFFIX: Final = {
    exponent: suffix for suffix, (_, exponent, fmt) in _SUFFIXES.items() if fmt is Format.DECIMAL_SI
}
_BINARY_SUFFIX: Final = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")

# Upstream's scanner as one pattern: sign, integer digits, optional fraction, then a suffix of
# suffix letters, an optional sign and digits. (Which suffixes mean something is checked
# after.) Equivalent to parseQuantityString: every group is a maximal run of its own class.
_QUANTITY_RE: Final = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[-+]?[0-9]*)")
_EXPONENT_RE: Final = re.compile(r"[eE]([+-]?)0*([0-9]+)")


def _interpret_suffix(text: str, suffix: str) -> tuple[int, int, Format]:
    known = _SUFFIXES.get(suffix)
    if known is not None:
        return known
    m = _EXPONENT_RE.fullmatch(suffix)
    if m is None or len(m.group(2)) > 10:
        raise QuantityError(text, ERR_SUFFIX)
    exponent = int(m.group(2))
    if exponent > _MAX_EXPONENT:
        raise QuantityError(text, ERR_SUFFIX)
    return 10, -exponent if m.group(1) == "-" else exponent, Format.DECIMAL_EXPONENT


@functools.lru_cache(maxsize=512)
def _pow10(exponent: int) -> int:
    return int(10**exponent)


def _ceil_div_pow10(value: int, places: int, digits: int) -> int:
    """``ceil(value / 10**places)`` for ``value > 0`` with ``digits`` decimal digits."""
    if places > digits:  # value < 10**digits <= 10**(places-1): a fraction of one
        return 1
    q, r = divmod(value, _pow10(places))
    return q + 1 if r else q


def _parse_text(text: str) -> Quantity:
    """ParseQuantity: the value exact, then rounded up to nano, capped, format settled."""
    if not text:
        raise QuantityError(text)
    if text == "0":
        return _ZERO
    m = _QUANTITY_RE.fullmatch(text)
    if m is None:
        raise QuantityError(text)
    sign, whole, frac, suffix = m.groups()
    base, exponent, fmt = _interpret_suffix(text, suffix)

    if not whole and not frac:
        # No digit at all ("-", ".", "Ki"). Upstream's fast path reads that as zero; its
        # slow path (taken for Pi/Ei and for exponents below -9) fails to parse a number.
        if (base == 2 and exponent >= 50) or (base == 10 and exponent < -9):
            raise QuantityError(text, ERR_NUMERIC)
        return Quantity(0, fmt)

    frac = (frac or "").rstrip("0")
    digits = (whole + frac).lstrip("0")
    if not digits:
        return Quantity(0, fmt)
    ndigits = len(digits)
    if ndigits > _MAX_SIG_DIGITS:
        raise QuantityError(text, ERR_TOO_LARGE)
    mantissa = int(digits)

    if base == 10:
        shift = exponent + 9 - len(frac)  # nanos = mantissa * 10**shift
        if shift >= 0:
            if ndigits + shift > _MAX_NANO_DIGITS:
                raise QuantityError(text, ERR_TOO_LARGE)
            nanos = mantissa * _pow10(shift)
        else:
            nanos = _ceil_div_pow10(mantissa, -shift, ndigits)
    else:
        scaled = mantissa << exponent  # at most ndigits + 19 decimal digits
        shift = 9 - len(frac)
        if shift >= 0:
            nanos = scaled * _pow10(shift)
        else:
            nanos = _ceil_div_pow10(scaled, -shift, ndigits + 19)
        if nanos > _BINARY_CAP_NANOS:
            nanos = _BINARY_CAP_NANOS
        if nanos < _NANO:  # between 0 and 1: avoid rounding, and confusion
            fmt = Format.DECIMAL_SI
    if nanos >= _MAX_NANOS:
        raise QuantityError(text, ERR_TOO_LARGE)
    return Quantity(-nanos if sign == "-" else nanos, fmt)


_parse_cached = functools.lru_cache(maxsize=8192)(_parse_text)


def _canonical(nanos: int, fmt: Format) -> str:
    """CanonicalizeBytes: the biggest suffix that keeps the value exact and whole."""
    if nanos == 0:
        return "0"
    sign = "-" if nanos < 0 else ""
    mag = -nanos if nanos < 0 else nanos
    if fmt is Format.BINARY_SI:
        if mag < 1024 * _NANO or mag % _NANO:
            fmt = Format.DECIMAL_SI  # under 1024, or not whole: binary would round
        else:
            units = mag // _NANO
            power = 0
            while units >= 1024 and not units & 1023:
                units >>= 10
                power += 1
            if power < len(_BINARY_SUFFIX):
                return f"{sign}{units}{_BINARY_SUFFIX[power]}"
            fmt = Format.DECIMAL_EXPONENT  # no binary suffix past Ei
    # Mantissa and a base-10 exponent that is a multiple of 3, starting from nano (-9):
    # stripping factors of 1000 is exactly "remove all factors of 10, then put back enough
    # to reach a multiple of 3".
    exponent = -9
    while not mag % 1000:
        mag //= 1000
        exponent += 3
    if fmt is Format.DECIMAL_SI:
        suffix = _DECIMAL_SUFFIX.get(exponent)
        if suffix is None:
            suffix = f"e{exponent}"  # past E: no SI suffix says it
    else:
        suffix = f"e{exponent}" if exponent else ""
    return f"{sign}{mag}{suffix}"


def _away_from_zero_div(nanos: int, unit: int) -> int:
    q, r = divmod(-nanos if nanos < 0 else nanos, unit)
    if r:
        q += 1
    return -q if nanos < 0 else q


@dataclass(frozen=True, slots=True, eq=False)
class Quantity:
    """An exact resource amount: ``nanos`` nano-units, written in ``format``.

    Equality, hashing and ordering are by value only (``1Gi == 1073741824``); the format
    only decides how ``str()`` writes it.
    """

    nanos: int
    format: Format = Format.DECIMAL_SI
    _text: str | None = field(default=None, init=False, repr=False)

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def parse(cls, text: str | int | float) -> Quantity:
        """Parse what the API accepts: every upstream string form, and JSON numbers.

        An ``int`` is its decimal digits; a ``float`` (a YAML/JSON number already decoded)
        is its shortest ``repr``, which is the text the number was written as.
        """
        if isinstance(text, str):
            return _parse_cached(text)
        if isinstance(text, bool):
            raise QuantityError(text)
        if isinstance(text, int):
            if -_MAX_NANOS < text * _NANO < _MAX_NANOS:
                return cls(text * _NANO, Format.DECIMAL_SI)
            raise QuantityError(text, ERR_TOO_LARGE)
        if isinstance(text, float):
            return _parse_cached(repr(text))
        raise QuantityError(text)

    @classmethod
    def from_json(cls, value: Any) -> Quantity:
        """Like upstream's UnmarshalJSON: surrounding whitespace is ignored, null is zero."""
        if value is None:
            return _ZERO
        if isinstance(value, str):
            return _parse_cached(value.strip())
        return cls.parse(value)

    @classmethod
    def from_int(cls, value: int, fmt: Format = Format.DECIMAL_SI) -> Quantity:
        """``NewQuantity``: a whole number of units (cores, bytes)."""
        return cls(value * _NANO, fmt)

    @classmethod
    def from_milli(cls, milli: int, fmt: Format = Format.DECIMAL_SI) -> Quantity:
        """``NewMilliQuantity``: thousandths of a unit (millicores)."""
        return cls(milli * 1_000_000, fmt)

    @classmethod
    def from_nanos(cls, nanos: int, fmt: Format = Format.DECIMAL_SI) -> Quantity:
        """Billionths of a unit, the internal representation."""
        return cls(nanos, fmt)

    @classmethod
    def from_fraction(cls, value: Fraction | int, fmt: Format = Format.DECIMAL_SI) -> Quantity:
        """An exact rational amount, rounded up (away from zero) to ``1n`` as parsing does;
        for computed amounts such as ``usage * 6/5``."""
        nanos = value * _NANO
        if isinstance(nanos, int):
            return cls(nanos, fmt)
        return cls(_away_from_zero_div(nanos.numerator, nanos.denominator), fmt)

    # -- reading ------------------------------------------------------------------------------

    def value(self) -> int:
        """Whole units, rounded away from zero (upstream ``Value()``: ``"1500m" -> 2``)."""
        return _away_from_zero_div(self.nanos, _NANO)

    def milli_value(self) -> int:
        """Thousandths, rounded away from zero (upstream ``MilliValue()``)."""
        return _away_from_zero_div(self.nanos, 1_000_000)

    def scaled_value(self, scale: int) -> int:
        """Value in units of ``10**scale``, rounded away from zero (``ScaledValue()``)."""
        if scale >= -9:
            return _away_from_zero_div(self.nanos, _pow10(scale + 9))
        return self.nanos * _pow10(-9 - scale)

    def to_fraction(self) -> Fraction:
        """The exact value in units."""
        return Fraction(self.nanos, _NANO)

    def is_zero(self) -> bool:
        return self.nanos == 0

    def sign(self) -> int:
        """-1, 0 or 1."""
        return (self.nanos > 0) - (self.nanos < 0)

    def with_format(self, fmt: Format) -> Quantity:
        return self if fmt is self.format else Quantity(self.nanos, fmt)

    def __str__(self) -> str:
        text = self._text
        if text is None:
            text = _canonical(self.nanos, self.format)
            object.__setattr__(self, "_text", text)
        return text

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"

    def __bool__(self) -> bool:
        return self.nanos != 0

    # -- arithmetic (format of the left operand, unless it is zero) -----------------------

    def __add__(self, other: Quantity) -> Quantity:
        if not isinstance(other, Quantity):
            return NotImplemented
        if other.nanos == 0:
            return self
        fmt = self.format if self.nanos else other.format
        return Quantity(self.nanos + other.nanos, fmt)

    def __radd__(self, other: object) -> Quantity:
        # Lets sum(quantities) start from the int 0.
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return self
        return NotImplemented

    def __sub__(self, other: Quantity) -> Quantity:
        if not isinstance(other, Quantity):
            return NotImplemented
        fmt = self.format if self.nanos else other.format
        return Quantity(self.nanos - other.nanos, fmt)

    def __neg__(self) -> Quantity:
        return Quantity(-self.nanos, self.format)

    def __abs__(self) -> Quantity:
        return self if self.nanos >= 0 else Quantity(-self.nanos, self.format)

    def __mul__(self, other: int) -> Quantity:
        if not isinstance(other, int) or isinstance(other, bool):
            return NotImplemented
        return Quantity(self.nanos * other, self.format)

    __rmul__ = __mul__

    # -- comparison: a total order by value ------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.nanos == other.nanos

    def __hash__(self) -> int:
        return hash(self.nanos)

    def __lt__(self, other: Quantity) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.nanos < other.nanos

    def __le__(self, other: Quantity) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.nanos <= other.nanos

    def __gt__(self, other: Quantity) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.nanos > other.nanos

    def __ge__(self, other: Quantity) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.nanos >= other.nanos

    def cmp(self, other: Quantity) -> int:
        """Upstream ``Cmp``: -1, 0 or 1."""
        return (self.nanos > other.nanos) - (self.nanos < other.nanos)


_ZERO: Final = Quantity(0, Format.DECIMAL_SI)


def parse_quantity(text: str | int | float) -> Quantity:
    """Alias of :meth:`Quantity.parse`."""
    return Quantity.parse(text)


def read_quantity(raw: Any, *, milli: bool = False) -> int | None:
    """A quantity field of an object another component wrote, read leniently: its value
    (``milli``: in thousandths, for CPU), or None when the field is absent or not a quantity.
    The one rule for readers (the scheduler's cache, the node agent, the dashboard, the
    replay) that must not fail on one bad field; the API server rejects such fields on write."""
    if raw is None:
        return None
    try:
        q = Quantity.from_json(raw)
    except (QuantityError, TypeError, ValueError):
        return None
    return q.milli_value() if milli else q.value()


_MAX_INT64_FACTORS: Final = 18


def _keeps_text(text: str) -> bool:
    """Whether upstream's ``ParseQuantity`` keeps `text` as the quantity's string (its fast
    path, ``// if the number is in canonical form, reuse the string``), so that
    ``MarshalJSON`` writes `text` back unchanged instead of the canonical form."""
    if text == "0":
        return True
    m = _QUANTITY_RE.fullmatch(text)
    if m is None:
        return False
    _, whole, frac, suffix = m.groups()
    num = whole.lstrip("0") or "0"  # parseQuantityString strips leading zeros
    denom = frac or ""
    _, exponent, fmt = _interpret_suffix(text, suffix)
    mantissa = 1
    if fmt is Format.BINARY_SI:
        scale = 0
        if exponent >= 0 and not denom:
            mantissa = 1 << exponent
            precision = 15 - len(num) - int(exponent * 3 / 10) - 1
        else:
            precision = -1
    else:
        scale = exponent
        precision = _MAX_INT64_FACTORS - (len(num) + len(denom))
    if precision < 0:
        return False
    scale -= len(denom)
    if scale < -9:
        return False
    shifted = num + denom
    value = int(shifted)
    if value * mantissa > _MAX_INT64:  # int64Multiply overflowed: the slow path
        return False
    if fmt is Format.BINARY_SI:
        return exponent % 10 == 0 and value & 0x07 != 0
    return scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"


def serialize(value: object) -> str:
    """The string upstream's API server stores and returns for a quantity it was sent as
    `value` (a JSON string or number): ``UnmarshalJSON`` then ``MarshalJSON``. ``0.5`` gives
    ``"500m"``, ``"1.5Gi"`` gives ``"1536Mi"``, ``"1000m"`` gives ``"1"``; a JSON ``null`` is
    the zero quantity, ``"0"``. Raises :class:`QuantityError` for what does not parse.

    A JSON number is judged by the text Python gives it back (``1e3`` was decoded to
    ``1000.0`` before we see it, and comes back ``"1k"`` where upstream keeps ``"1e3"``)."""
    if value is None:
        return "0"
    if isinstance(value, bool):
        raise QuantityError(value)
    if isinstance(value, str):
        text = value.strip()
    elif isinstance(value, int):
        text = str(value)
    elif isinstance(value, float):
        text = repr(value)
    else:
        raise QuantityError(value)
    quantity = Quantity.parse(text)
    try:
        if _keeps_text(text):
            return text
    except QuantityError:
        pass
    return str(quantity)
