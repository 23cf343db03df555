"""Pattern language (docs/semantics.md §2): tokenizer and parser producing a small syntax tree.

Patterns are tokenized first, then parsed by recursive descent; every error names the
offending position so that a user can find it in a long pattern. Nothing is evaluated.

The parser also bounds what a pattern may cost (docs/engine.md §2, Limits): the length
of the text, how deeply it nests and how many symbol positions it expands to are checked
while parsing, so that no pattern text can make the automaton construction run away.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from probcep.errors import ProbcepError

#: Upper bound on a repetition count: `p{m,n}` is expanded into copies of `p`, so an
#: absurd bound would build an absurd automaton.
MAX_REPEAT = 200
#: Longest pattern text, in characters, that is read at all.
MAX_PATTERN_LENGTH = 20_000
#: Deepest nesting of groups `( … )`, and separately of repetitions applied to
#: repetitions (`((a+){2})*` nests three repetitions). Keeps the recursive parser and
#: builder far from Python's recursion limit.
MAX_NESTING = 50
#: Most symbol positions a pattern may expand to once every repetition is written out as
#: copies (`(a b){3}` expands to 6, `a+` to 2, `(a{200}){200}` to 40,000).
MAX_POSITIONS = 10_000


#: Characters of a pattern an error shows on either side of its position.
ECHO_AROUND = 60


class PatternError(ProbcepError, ValueError):
    """A pattern that cannot be used, with the 0-based position of the problem."""

    def __init__(self, message: str, pattern: str, position: int):
        self.pattern = pattern
        self.position = position
        shown = re.sub(r"\s", " ", pattern)  # one column a character: tabs and line
        # breaks moved the caret off the position (or below the pattern's last line)
        # a long pattern is shown around the position (QA: 20 kB echoed on one line)
        lo, hi = max(0, position - ECHO_AROUND), position + ECHO_AROUND
        head, tail = ("… " if lo else ""), (" …" if hi < len(shown) else "")
        pointer = " " * (len(head) + position - lo) + "^"
        super().__init__(f"{message} at position {position}\n  {head}{shown[lo:hi]}{tail}"
                         f"\n  {pointer}")


# --- syntax tree -------------------------------------------------------------------


@dataclass(frozen=True)
class Symbol:
    name: str
    position: int


@dataclass(frozen=True)
class AnySymbol:
    """`.`: any symbol of the domain."""


@dataclass(frozen=True)
class SymbolClass:
    """`[a b]` (negated=False) or `[^a b]` (negated=True)."""

    members: tuple[Symbol, ...]
    negated: bool
    position: int = field(default=0, compare=False)  # of its '[', for messages only


#: Where a node's text starts, for messages only (never part of a node's identity).
def _at() -> int:
    return field(default=0, compare=False)


@dataclass(frozen=True)
class Concat:
    parts: tuple[object, ...]
    position: int = _at()


@dataclass(frozen=True)
class Alternation:
    options: tuple[object, ...]
    position: int = _at()


@dataclass(frozen=True)
class Repeat:
    """`item{low,high}`; high is None for an unbounded upper end."""

    item: object
    low: int
    high: int | None
    position: int = _at()  # of the item's first token (a group's '(')


# --- tokenizer ---------------------------------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<brace>\{[^}]*\})
  | (?P<punct>[()|+*?.\[\]^])
    """,
    re.VERBOSE,
)
#: What a pattern can name: an identifier (docs/semantics.md §2).
SYMBOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BRACE = re.compile(r"\{\s*([0-9]+)\s*(?:(,)\s*([0-9]*)\s*)?\}")  # ASCII digits only


@dataclass(frozen=True)
class Token:
    kind: str  # "ident", "brace", or the punctuation character itself
    text: str
    position: int


def tokenize(pattern: str) -> list[Token]:
    tokens: list[Token] = []
    pos = 0
    while pos < len(pattern):
        m = _TOKEN.match(pattern, pos)
        if m is None:
            raise PatternError(f"unexpected character {pattern[pos]!r}", pattern, pos)
        kind = m.lastgroup
        if kind == "ident" or kind == "brace":
            tokens.append(Token(kind, m.group(), pos))
        elif kind == "punct":
            tokens.append(Token(m.group(), m.group(), pos))
        pos = m.end()
    return tokens


# --- parser ------------------------------------------------------------------------


def _copies(low: int, high: int | None) -> int:
    """How many copies of its item a repetition expands to (automaton.py builds as many)."""
    return low + 1 if high is None else high


def _too_large(what: str, positions: int) -> str:
    return (f"pattern too large: {what}expands to {positions:,} symbol positions, "
            f"more than the limit of {MAX_POSITIONS:,} (MAX_POSITIONS)")


class _Parser:
    """Recursive descent. Every parsing method returns (node, positions, nesting): the
    symbol positions the node expands to and how many repetitions nest in it, so that
    both limits are checked at the token that goes over them."""

    def __init__(self, pattern: str):
        self.pattern = pattern
        self.tokens = tokenize(pattern)
        self.i = 0
        self.groups = 0  # groups open at the current token

    def error(self, message: str, token: Token | None = None):
        position = token.position if token else len(self.pattern)
        raise PatternError(message, self.pattern, position)

    def peek(self) -> Token | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> Token:
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def parse(self):
        if not self.tokens:
            self.error("empty pattern", None)
        tree, positions, _ = self.alternation()
        tok = self.peek()
        if tok is not None:
            self.error(f"unexpected {tok.text!r}", tok)
        if positions > MAX_POSITIONS:
            self.error(_too_large("", positions), self.tokens[0])
        return tree

    def alternation(self):
        start = self.peek().position if self.peek() else len(self.pattern)
        first, positions, nesting = self.concatenation()
        options = [first]
        while (tok := self.peek()) is not None and tok.kind == "|":
            self.take()
            option, more, deeper = self.concatenation()
            options.append(option)
            positions += more
            nesting = max(nesting, deeper)
        tree = options[0] if len(options) == 1 else Alternation(tuple(options), start)
        return tree, positions, nesting

    def concatenation(self):
        start = self.peek().position if self.peek() else len(self.pattern)
        parts, positions, nesting = [], 0, 0
        while (tok := self.peek()) is not None and tok.kind not in ("|", ")"):
            part, more, deeper = self.repetition()
            parts.append(part)
            positions += more
            nesting = max(nesting, deeper)
        if not parts:
            self.error("expected a symbol, '.', '[' or '('", self.peek())
        return (parts[0] if len(parts) == 1 else Concat(tuple(parts), start)), positions, nesting

    def repetition(self):
        start = self.peek().position if self.peek() else len(self.pattern)
        item, positions, nesting = self.atom()
        while (tok := self.peek()) is not None and tok.kind in ("+", "*", "?", "brace"):
            self.take()
            if tok.kind == "+":
                low, high = 1, None
            elif tok.kind == "*":
                low, high = 0, None
            elif tok.kind == "?":
                low, high = 0, 1
            else:
                low, high = self.bounds(tok)
            item = Repeat(item, low, high, start)
            nesting += 1
            if nesting > MAX_NESTING:
                self.error(f"pattern nests too deeply: more than {MAX_NESTING} repetitions "
                           f"inside one another (MAX_NESTING)", tok)
            positions *= _copies(low, high)
            if positions > MAX_POSITIONS:
                self.error(_too_large("this repetition ", positions), tok)
        return item, positions, nesting

    def bounds(self, tok: Token) -> tuple[int, int | None]:
        m = _BRACE.fullmatch(tok.text)
        if m is None:
            self.error(f"bad repetition {tok.text!r}, expected {{m}}, {{m,}} or {{m,n}}", tok)
        # A count with more digits than the limit is over it: never hand int() a huge string.
        digits = max(len(m.group(1).lstrip("0")), len((m.group(3) or "").lstrip("0")))
        if digits > len(str(MAX_REPEAT)):
            self.error(f"repetition {tok.text!r} exceeds the limit of {MAX_REPEAT}", tok)
        low = int(m.group(1))
        high: int | None
        if m.group(2) is None:
            high = low
        else:
            high = int(m.group(3)) if m.group(3) else None
        if high is not None and high < low:
            self.error(f"repetition {tok.text!r} has its upper bound below its lower bound", tok)
        if max(low, high or 0) > MAX_REPEAT:
            self.error(f"repetition {tok.text!r} exceeds the limit of {MAX_REPEAT}", tok)
        return low, high

    def atom(self):
        tok = self.peek()
        if tok is None:
            self.error("pattern ends where a symbol, '.', '[' or '(' was expected", None)
        if tok.kind == "ident":
            self.take()
            return Symbol(tok.text, tok.position), 1, 0
        if tok.kind == ".":
            self.take()
            return AnySymbol(), 1, 0
        if tok.kind == "[":
            return self.symbol_class(), 1, 0
        if tok.kind == "(":
            if self.groups >= MAX_NESTING:
                self.error(f"pattern nests too deeply: more than {MAX_NESTING} groups "
                           f"inside one another (MAX_NESTING)", tok)
            self.take()
            self.groups += 1
            inner = self.alternation()
            self.groups -= 1
            close = self.peek()
            if close is None or close.kind != ")":
                self.error("missing ')' for the '(' opened here", tok)
            self.take()
            return inner
        self.error(f"unexpected {tok.text!r}", tok)

    def symbol_class(self):
        opening = self.take()
        negated = False
        if (tok := self.peek()) is not None and tok.kind == "^":
            self.take()
            negated = True
        members = []
        while (tok := self.peek()) is not None and tok.kind == "ident":
            self.take()
            members.append(Symbol(tok.text, tok.position))
        tok = self.peek()
        if tok is None or tok.kind != "]":
            if tok is None:
                self.error("missing ']' for the '[' opened here", opening)
            self.error(f"only symbol names may stand inside [...], found {tok.text!r}", tok)
        if not members:
            self.error("empty symbol class", opening)
        self.take()
        return SymbolClass(tuple(members), negated, opening.position)


def empty_at(node) -> int | None:
    """Where `node` can match the empty sequence: the start of the smallest part that
    lets it (an optional repetition, or a concatenation of such parts), else None."""
    if isinstance(node, Alternation):
        return next((p for p in map(empty_at, node.options) if p is not None), None)
    if isinstance(node, Concat):
        return node.position if all(empty_at(p) is not None for p in node.parts) else None
    if isinstance(node, Repeat):
        return node.position if node.low == 0 else empty_at(node.item)
    return None  # a symbol, '.', a class: one timestep each


def never_at(node, domain) -> int | None:
    """Where `node` can match nothing over `domain`: the start of the first part that
    every match needs and none can have (a class of no domain symbol, `[^a b c]` over
    a, b, c), else None."""
    if isinstance(node, Alternation):
        found = [never_at(o, domain) for o in node.options]
        return found[0] if all(p is not None for p in found) else None
    if isinstance(node, Concat):
        return next((p for p in (never_at(q, domain) for q in node.parts) if p is not None),
                    None)
    if isinstance(node, Repeat):
        return None if node.low == 0 else never_at(node.item, domain)
    if isinstance(node, SymbolClass):
        named = {m.name for m in node.members}
        return node.position if (set(domain) <= named if node.negated else not named) \
            else None
    return None  # a symbol of the domain, '.'


def parse(pattern: str):
    """Parse a pattern into its syntax tree; raises PatternError with a position."""
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a string, not {type(pattern).__name__}")
    if len(pattern) > MAX_PATTERN_LENGTH:  # the message shows the start of the text only
        raise PatternError(
            f"pattern too long: {len(pattern):,} characters, more than the limit of "
            f"{MAX_PATTERN_LENGTH:,} (MAX_PATTERN_LENGTH)", pattern[:ECHO_AROUND] + " …", 0)
    return _Parser(pattern).parse()
