"""The Jinja sandbox that renders reports, with limits a template cannot exceed.

Templates may come from a stranger (``--template-dir``).  Jinja's sandbox already refuses
unsafe attributes (``__init__``, ``__globals__``; Jinja2 ≥ 3.1.6 also through
``|attr('format')``) and ranges above 100,000 items.  On top of it, one rendering may
build no value above :data:`MAX_CHARACTERS` characters (:data:`MAX_USER_CHARACTERS` with
templates of a user's directory) and no output above :data:`MAX_CHARACTERS`, iterate at most
:data:`MAX_ITEMS` times in all its loops, nor run past :data:`MAX_SECONDS` of
wall-clock time; ``*``, ``**``, ``%``, ``+`` and ``~`` are checked before or after they
build a value.  Going over a limit raises :class:`TemplateLimitError`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Iterator
from typing import Any

from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.exceptions import SecurityError
from jinja2.runtime import Context
from jinja2.sandbox import ImmutableSandboxedEnvironment

#: The longest value (string or sequence) or output a template may build, in characters
#: or items (a built-in report of 10,000 stages is about 2 million).
MAX_CHARACTERS = 10_000_000
#: The longest value a rendering with a user's templates may build (sorting or linking
#: a million items takes about a second and 150 MB).
MAX_USER_CHARACTERS = 1_000_000
#: How many loop iterations one rendering may run, all loops together.
MAX_ITEMS = 1_000_000
#: How long one rendering may take.
MAX_SECONDS = 30.0
#: The largest integer a template may build with ``*`` or ``**``, in bits.
MAX_BITS = 10_000
_COUNTED = "privspec_counted"


class TemplateLimitError(SecurityError):
    """A template went over one of the sandbox's limits."""


class _Compiler(CodeGenerator):
    """Jinja's code generator, with every ``~`` concatenation checked for length."""

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:  # noqa: N802 (Jinja's name)
        self.write("environment.joined(")
        super().visit_Concat(node, frame)
        self.write(")")


def _size(value: Any) -> int:
    return len(value) if isinstance(value, (str, bytes, list, tuple)) else 0


class LimitedSandbox(ImmutableSandboxedEnvironment):
    """An immutable sandbox whose renderings stay within the limits above, values within
    ``max_characters`` (start each rendering with :meth:`start`)."""

    code_generator_class = _Compiler
    intercepted_binops = frozenset({"*", "**", "%", "+"})

    def __init__(self, max_characters: int = MAX_CHARACTERS, **options: Any) -> None:
        super().__init__(**options)
        self.max_characters = max_characters
        self.filters[_COUNTED] = self.counted
        self.start()

    def start(self) -> None:
        """Reset the iteration count and the clock (one rendering begins)."""
        self._items = 0
        self._deadline = time.monotonic() + MAX_SECONDS

    def _tick(self, items: int = 0) -> None:
        self._items += items
        if self._items > MAX_ITEMS:
            raise TemplateLimitError(f"more than {MAX_ITEMS:,} loop iterations")
        if time.monotonic() > self._deadline:
            raise TemplateLimitError(f"took longer than {MAX_SECONDS:g} s")

    def checked(self, value: Any) -> Any:
        """``value``, if it is within ``max_characters``."""
        if _size(value) > self.max_characters:
            raise TemplateLimitError(f"a value longer than {self.max_characters:,} characters")
        self._tick()
        return value

    def joined(self, text: Any) -> Any:
        """The result of a ``~`` concatenation, checked."""
        return self.checked(text)

    def counted(self, iterable: Iterable[Any]) -> Iterator[Any]:
        """A loop's items, each counted towards :data:`MAX_ITEMS`."""
        for item in iterable:
            self._tick(1)
            yield item

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        """The template's syntax tree, each ``for`` loop iterating through ``counted``."""
        tree = super()._parse(source, name, filename)
        for loop in tree.find_all(nodes.For):
            loop.iter = nodes.Filter(loop.iter, _COUNTED, [], [], None, None,
                                     lineno=loop.lineno)
        return tree

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        """``left operator right``, refused when it would build too large a value."""
        numbers = isinstance(left, int) and isinstance(right, int)
        if operator == "**" and numbers and right > 0 and abs(left) > 1 and (
                right * abs(left).bit_length() > MAX_BITS):
            raise TemplateLimitError(f"an integer above 2^{MAX_BITS}")
        limit = self.max_characters
        if operator == "*":
            if numbers and left.bit_length() + right.bit_length() > MAX_BITS:
                raise TemplateLimitError(f"an integer above 2^{MAX_BITS}")
            count = right if isinstance(right, int) else left if isinstance(left, int) else 0
            if count * (_size(left) + _size(right)) > limit:
                raise TemplateLimitError(f"a value longer than {limit:,} characters")
        if operator == "%" and isinstance(left, str):
            widths = [int(digits) for digits in re.findall(r"[0-9]+", left)]
            widths += [value for value in (right if isinstance(right, tuple) else (right,))
                       if isinstance(value, int)]
            if max(widths, default=0) > limit:
                raise TemplateLimitError(f"a value longer than {limit:,} characters")
        if operator == "+" and _size(left) + _size(right) > limit:
            raise TemplateLimitError(f"a value longer than {limit:,} characters")
        return self.checked(super().call_binop(context, operator, left, right))


def limited_filters(environment: LimitedSandbox) -> None:
    """Wrap every filter of ``environment`` so that no integer argument is above its
    ``max_characters`` (``center(10**9)``) and no result is longer."""
    for name, function in list(environment.filters.items()):
        if name == _COUNTED:
            continue
        environment.filters[name] = _limited(environment, function)


def _limited(environment: LimitedSandbox, function: Any) -> Any:
    passed = getattr(function, "jinja_pass_arg", None)  # pass_context and its kin
    first = 1 if passed is None else 2  # the arguments after the value filtered

    def limited(*args: Any, **kwargs: Any) -> Any:
        values = [*args[first:], *kwargs.values()]
        limit = environment.max_characters
        if any(isinstance(value, int) and value > limit for value in values):
            raise TemplateLimitError(f"a filter argument above {limit:,}")
        return environment.checked(function(*args, **kwargs))

    if passed is not None:
        limited.jinja_pass_arg = passed  # type: ignore[attr-defined]
    return limited
