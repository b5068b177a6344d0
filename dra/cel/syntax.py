"""CEL syntax trees with source positions, for static analysis of DRA selectors.

The trees answer two questions about an expression without evaluating it: which parts of
``device`` it reads (so results can be cached per distinct value tuple) and where
``device.attributes[...]`` / ``device.capacity[...]`` lookups are (so they can be given
Kubernetes' "unknown domain is an empty map" behaviour). Evaluation itself is done by
cel-expr-python in :mod:`dra.cel`; when an expression cannot be parsed here the caller falls
back to conservative behaviour, this module never decides validity.

Parsing is celpy's: its Lark grammar (``celpy/cel.lark``) with celpy's parser options, run by
Lark's LALR parser, which keeps its own stack (no Python recursion per nesting level) and here
builds the nodes as it reduces (no parse tree). Three things differ from
``celpy.celparser.CELParser``, each for a reason:

- Every token is kept (``keep_all_tokens``) and ``true``/``false`` keep their positions
  (celpy's lexer callback makes new tokens without them), so every node's span and the
  positions of its ``.``, ``[`` and operator come from tokens.
- Before Lark sees the text, :func:`_prepare` rewrites it without moving any character:
  string literals become ``"____"`` placeholders of the same length (celpy's string
  terminals backtrack exponentially on an unterminated string with escapes, ~0.6 s at 20
  escapes, doubling with each more; values are decoded from the original text), comments
  become spaces, and the two constructs of cel-go's grammar that celpy's lacks become
  spaces: the ``?`` of optional syntax (``a.?b``, ``a[?k]``, ``[?x]``, ``{?k: v}``), noted
  so that selects and indexes keep their ``optional`` flag, and a trailing ``,`` before
  ``]`` or ``}``.
- Nesting is counted while Lark reads the tokens: more than :data:`MAX_NESTING` open
  brackets stop it at once with :class:`CelNestingError`; any other tree deeper than the
  limit (runs of unary operators, selects, ternaries) is refused by the iterative walk that
  completes it (:func:`_complete`).

What celpy's grammar reads differently from cel-go's, all of it invalid in Kubernetes either
way (cel-expr-python reports the error): reserved words (``as``, ``let``, ...) parse as
identifiers; ``x invalid`` reads as ``x in valid``; backtick-escaped field names (an opt-in
of cel-go that Kubernetes' environment does not enable) do not parse. One rule of celpy's
grammar is put back to the specification's: a float needs a digit after its dot, so ``1.size()``
is a call on the int ``1``, as in cel-go.
"""

from __future__ import annotations

import os
import re
from bisect import bisect_left
from dataclasses import dataclass, field
from functools import cache
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from lark import Lark, Token, Transformer
from lark.exceptions import LarkError, UnexpectedToken

__all__ = [
    "MAX_NESTING",
    "CelNestingError",
    "CelSyntaxError",
    "Node",
    "Ident",
    "Literal",
    "Select",
    "Index",
    "Call",
    "Aggregate",
    "Operator",
    "children",
    "depth",
    "parse",
]


MAX_NESTING = 50


class CelSyntaxError(ValueError):
    """The expression could not be parsed here (cel-expr-python will report the real error).

    ``position`` is the offset in the expression where parsing stopped, when known.
    """

    def __init__(self, message: str, position: int | None = None) -> None:
        super().__init__(message if position is None else f"{message} at {position}")
        self.position = position


class CelNestingError(CelSyntaxError):
    """The expression nests deeper than :data:`MAX_NESTING` (a compile error of its own).

    Every walk over a tree recurses once per level, so the depth is bounded before anything
    recurses on it; cel-cpp itself stops at 32 levels.
    """

    def __init__(self) -> None:
        super().__init__(f"expression nesting exceeds the limit of {MAX_NESTING} levels")


@dataclass(slots=True)
class Node:
    start: int
    end: int


@dataclass(slots=True)
class Ident(Node):
    name: str = ""


@dataclass(slots=True)
class Literal(Node):
    kind: str = ""
    value: Any = None


@dataclass(slots=True)
class Select(Node):
    operand: Node | None = None
    field: str = ""
    dot: int = 0  # position of the "."
    optional: bool = False


@dataclass(slots=True)
class Index(Node):
    operand: Node | None = None
    key: Node | None = None
    bracket: int = 0  # position of the "["
    optional: bool = False


@dataclass(slots=True)
class Call(Node):
    target: Node | None = None
    function: str = ""
    args: list[Node] = field(default_factory=list)


@dataclass(slots=True)
class Aggregate(Node):
    """List, map or message literal; ``children`` are all element/key/value expressions."""

    children: list[Node] = field(default_factory=list)


@dataclass(slots=True)
class Operator(Node):
    operator: str = ""
    operands: list[Node] = field(default_factory=list)
    position: int = 0


# Escapes of CEL string literals (cel-spec langdef). celpy's own decoder (celpy.evaluation.
# celstr) lacks \?, \` and \X, so values are decoded here.
_ESCAPES = {
    "a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
    "\\": "\\", "'": "'", '"': '"', "`": "`", "?": "?",
}  # fmt: skip

# The lexemes _prepare rewrites: CEL's string literals (cel-go's lexer: an optional b/B, an
# optional r/R, then one of four quotings; raw ones have no escapes), written so that every
# character can be read one way only (linear time), comments, and a quote that opens no
# well-formed string.
_LEXEMES = re.compile(
    r"""(?P<raw>[bB]?[rR](?:'''(?:[^']|'(?!''))*'''|\"\"\"(?:[^"]|"(?!""))*\"\"\"
                         |'[^'\n\r]*'|"[^"\n\r]*"))
      | (?P<cooked>[bB]?(?:'''(?:[^'\\]|\\[\s\S]|'(?!''))*'''
                          |\"\"\"(?:[^"\\]|\\[\s\S]|"(?!""))*\"\"\"
                          |'(?:[^'\\\n\r]|\\.)*'|"(?:[^"\\\n\r]|\\.)*"))
      | (?P<comment>//[^\n]*)
      | (?P<quote>['"])""",
    re.VERBOSE,
)
_NEEDS_PREPARING = re.compile(r"""['"/?]|,[\t\n\f\r ]*[\]}]""")
_OPTIONAL_MARK = re.compile(r"(?<=[.\[{,])([\t\n\f\r ]*)\?")
_TRAILING_COMMA = re.compile(r"(?<![\[{,\t\n\f\r ])([\t\n\f\r ]*),(?=[\t\n\f\r ]*[\]}])")

_OPENING = frozenset({"LPAR", "LSQB", "LBRACE"})
_CLOSING = frozenset({"RPAR", "RSQB", "RBRACE"})


def _literal_words(token: Token) -> Token:
    """celpy's ``ambiguous_literals``, keeping the token's position."""
    if token.value in ("true", "false"):
        return Token.new_borrow_pos("BOOL_LIT", token.value, token)
    return token


def _prepare(text: str) -> tuple[str, list[int]]:
    """The text Lark parses, of the same length, and the positions of optional-syntax ``?``."""
    if not _NEEDS_PREPARING.search(text):
        return text, []
    pieces: list[str] = []
    last = 0
    for match in _LEXEMES.finditer(text):
        start, end = match.span()
        if match.lastgroup == "quote":
            raise CelSyntaxError("unterminated string", start)
        if match.lastgroup == "comment":
            replacement = " " * (end - start)
        else:
            prefix = text[start:end].split("'")[0].split('"')[0]
            replacement = prefix + '"' + "_" * (end - start - len(prefix) - 2) + '"'
        pieces += (text[last:start], replacement)
        last = end
    pieces.append(text[last:])
    prepared = "".join(pieces)
    marks = [match.end() - 1 for match in _OPTIONAL_MARK.finditer(prepared)]
    prepared = _OPTIONAL_MARK.sub(lambda match: match.group(1) + " ", prepared)
    prepared = _TRAILING_COMMA.sub(lambda match: match.group(1) + " ", prepared)
    return prepared, marks


def _decode(body: str) -> str:
    if "\\" not in body:
        return body
    result = []
    index = 0
    while index < len(body):
        character = body[index]
        if character != "\\" or index + 1 >= len(body):
            result.append(character)
            index += 1
            continue
        marker = body[index + 1]
        if marker in _ESCAPES:
            result.append(_ESCAPES[marker])
            index += 2
        elif marker in "xX":
            result.append(chr(int(body[index + 2 : index + 4], 16)))
            index += 4
        elif marker == "u":
            result.append(chr(int(body[index + 2 : index + 6], 16)))
            index += 6
        elif marker == "U":
            result.append(chr(int(body[index + 2 : index + 10], 16)))
            index += 10
        elif marker in "0123":
            result.append(chr(int(body[index + 1 : index + 4], 8)))
            index += 4
        else:
            raise ValueError(f"invalid escape {body[index : index + 2]!r}")
    return "".join(result)


def _string_value(literal: str) -> str:
    """The value of a string or bytes literal's source text (bytes as text, like strings)."""
    prefix = len(literal) - len(literal.lstrip("bBrR"))
    quote = 3 if literal[prefix : prefix + 3] in ('"""', "'''") else 1
    body = literal[prefix + quote : len(literal) - quote]
    return body if "r" in literal[:prefix].lower() else _decode(body)


def _literal(token: Token) -> Node:
    """A literal without its value (filled in by :func:`_complete` from the original text)."""
    start, end = _position(token), _end(token)
    kind = _LITERAL_KINDS[token.type]
    if kind in ("int", "uint", "double") and token.startswith("-"):
        # celpy's grammar folds a leading minus into the number; cel-go's has unary minus.
        return Operator(start, end, "-", [Literal(start + 1, end, kind)], start)
    return Literal(start, end, kind)


_LITERAL_KINDS = {
    "INT_LIT": "int", "UINT_LIT": "uint", "FLOAT_LIT": "double", "STRING_LIT": "string",
    "MLSTRING_LIT": "string", "BYTES_LIT": "bytes", "BOOL_LIT": "bool", "NULL_LIT": "null",
}  # fmt: skip


def _value(kind: str, source: str) -> Any:
    """The value of a literal's source text (bytes as text, like strings)."""
    if kind in ("int", "uint"):
        digits = source.rstrip("uU")
        return int(digits[2:], 16) if digits.startswith("0x") else int(digits)
    if kind == "double":
        return float(source)
    if kind == "bool":
        return source == "true"
    if kind == "null":
        return None
    return _string_value(source)


@dataclass(slots=True)
class _Chain:
    """Operands of one run of ``&&`` or ``||``, balanced once the run is complete."""

    operator: str
    operands: list[Node]
    positions: list[int]

    def node(self) -> Node:
        return _balanced(self.operands, self.positions, self.operator)


def _node(value: Node | _Chain) -> Node:
    return value.node() if isinstance(value, _Chain) else value


def _position(token: Token) -> int:
    assert token.start_pos is not None
    return token.start_pos


def _end(token: Token) -> int:
    assert token.end_pos is not None
    return token.end_pos


class _Builder(Transformer[Token, Any]):
    """Builds the :class:`Node` of each rule of celpy's grammar from its children's.

    Lark calls these as its LALR parser reduces, so no parse tree is built and nothing
    recurses. They see the prepared text only: literal values and optional flags are set by
    :func:`_complete`.
    """

    def expr(self, values: list[Any]) -> Node:
        if len(values) == 1:
            return _node(values[0])
        condition, question, when_true, _, when_false = values
        return Operator(
            condition.start, when_false.end, "?:", [_node(condition), _node(when_true), when_false],
            _position(question),
        )  # fmt: skip

    def conditionalor(self, values: list[Any]) -> Node | _Chain:
        return self.chain("||", values)

    def conditionaland(self, values: list[Any]) -> Node | _Chain:
        return self.chain("&&", values)

    def chain(self, operator: str, values: list[Any]) -> Node | _Chain:
        if len(values) == 1:
            return values[0]  # type: ignore[no-any-return]
        left, token, right = values
        if not (isinstance(left, _Chain) and left.operator == operator):
            left = _Chain(operator, [_node(left)], [])
        left.operands.append(_node(right))
        left.positions.append(_position(token))
        return left

    def binary(self, values: list[Any]) -> Node:
        if len(values) == 1:
            return values[0]  # type: ignore[no-any-return]
        (left, token), right = values
        return Operator(left.start, right.end, str(token), [left, right], _position(token))

    relation = addition = multiplication = binary

    def operator(self, values: list[Any]) -> tuple[Node, Token]:
        return values[0], values[1]

    relation_lt = relation_le = relation_gt = relation_ge = operator
    relation_eq = relation_ne = relation_in = operator
    addition_add = addition_sub = operator
    multiplication_mul = multiplication_div = multiplication_mod = operator

    def unary(self, values: list[Any]) -> Node:
        if len(values) == 1:
            return values[0]  # type: ignore[no-any-return]
        token, operand = values
        return Operator(_position(token), operand.end, str(token), [operand], _position(token))

    def only(self, values: list[Any]) -> Any:
        return values[0]

    unary_not = unary_neg = member = primary = only

    def literal(self, values: list[Any]) -> Node:
        return _literal(values[0])

    def exprlist(self, values: list[Any]) -> list[Node]:
        return [value for value in values if isinstance(value, Node)]

    fieldinits = mapinits = exprlist

    def member_dot(self, values: list[Any]) -> Node:
        operand, dot, name = values
        return Select(operand.start, _end(name), operand, str(name), _position(dot))

    def member_dot_arg(self, values: list[Any]) -> Node:
        operand, name = values[0], values[2]
        args = values[4] if len(values) == 6 else []
        return Call(operand.start, _end(values[-1]), operand, str(name), args)

    def member_index(self, values: list[Any]) -> Node:
        operand, bracket, key, closing = values
        return Index(operand.start, _end(closing), operand, key, _position(bracket))

    def member_object(self, values: list[Any]) -> Node:
        fields = values[2] if len(values) == 4 else []
        return Aggregate(values[0].start, _end(values[-1]), fields)

    def ident_arg(self, values: list[Any]) -> Node:
        name = values[1] if values[0].type == "DOT" else values[0]
        args = values[-2] if isinstance(values[-2], list) else []
        return Call(_position(values[0]), _end(values[-1]), None, str(name), args)

    dot_ident_arg = ident_arg

    def ident(self, values: list[Any]) -> Node:
        return Ident(_position(values[0]), _end(values[-1]), str(values[-1]))

    dot_ident = ident

    def paren_expr(self, values: list[Any]) -> Node:
        opening, inner, closing = values
        return Operator(_position(opening), _end(closing), "()", [inner], _position(opening))

    def list_lit(self, values: list[Any]) -> Node:
        elements = values[1] if len(values) == 3 else []
        return Aggregate(_position(values[0]), _end(values[-1]), elements)

    map_lit = list_lit


_CELPY_FLOAT = (
    'FLOAT_LIT      : /-?/ DIGIT+ "." DIGIT* EXPONENT? | /-?/ DIGIT* "." DIGIT+ EXPONENT?'
)
_SPEC_FLOAT = 'FLOAT_LIT      : /-?/ DIGIT* "." DIGIT+ EXPONENT?'


def _table_cache() -> str | bool:
    """Where Lark keeps the parse tables it builds from the grammar (0.4 s on first use, 50 ms
    to load): a file in this user's own cache directory, never a shared temporary directory
    (the file is unpickled). ``False`` (build every time) when that directory is not writable."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "dra-portal"
    try:
        base.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return False
    if not os.access(base, os.W_OK) or base.stat().st_uid != os.getuid():
        return False
    return str(base / "cel-grammar.lark-cache")


@cache
def _parser() -> Lark:
    """celpy's grammar with celpy's parser options, keeping every token's position."""
    # Read next to celpy's modules without importing celpy (its evaluator is not needed here).
    spec = find_spec("celpy")
    assert spec is not None and spec.origin is not None, "cel-python is a dependency"
    grammar = Path(spec.origin).with_name("cel.lark").read_text(encoding="utf-8")
    # One correction to celpy's grammar, back to the CEL specification's: a float literal needs
    # a digit after its dot (``1.`` is not a number, so ``1.all(...)`` is a call on ``1``).
    grammar = grammar.replace(_CELPY_FLOAT, _SPEC_FLOAT)
    return Lark(
        grammar,
        cache=_table_cache(),
        parser="lalr",
        start="expr",
        g_regex_flags=re.M,
        lexer_callbacks={"IDENT": _literal_words},
        maybe_placeholders=False,
        priority="invert",
        keep_all_tokens=True,
        transformer=_Builder(),
    )


def _build(prepared: str, limit: int) -> Node:
    """The tree of the prepared text, stopping at the first bracket nested too deep."""
    interactive = _parser().parse_interactive(prepared)
    level = 0
    try:
        for token in interactive.iter_parse():
            if token.type in _OPENING:
                level += 1
                if level > limit:
                    raise CelNestingError
            elif token.type in _CLOSING:
                level -= 1
        node: Node = interactive.resume_parse()  # type: ignore[no-untyped-call]
    except UnexpectedToken as error:
        at_end = error.token.type == "$END"
        raise CelSyntaxError(
            "syntax error", len(prepared) if at_end else error.pos_in_stream
        ) from None
    except LarkError as error:
        raise CelSyntaxError("syntax error", getattr(error, "pos_in_stream", None)) from None
    return node


def _complete(root: Node, text: str, marks: list[int], limit: int) -> None:
    """Check the depth, and set what only the original text tells: literal values and the
    ``optional`` flags of selects and indexes whose ``?`` :func:`_prepare` removed."""

    def marked(start: int, end: int) -> bool:
        index = bisect_left(marks, start)
        return index < len(marks) and marks[index] < end

    stack = [(root, 1)]
    while stack:
        node, level = stack.pop()
        if level > limit:
            raise CelNestingError
        if isinstance(node, Literal):
            try:
                node.value = _value(node.kind, text[node.start : node.end])
            except ValueError as error:  # a bad escape, a number too long
                raise CelSyntaxError(str(error), node.start) from None
        elif marks and isinstance(node, Select) and node.operand is not None:
            node.optional = marked(node.dot, node.end)
        elif marks and isinstance(node, Index) and node.key is not None:
            node.optional = marked(node.bracket, node.key.start)
        elif marks and isinstance(node, Call) and node.target is not None:
            end = node.args[0].start if node.args else node.end
            if marked(node.target.end, end):
                raise CelSyntaxError("an optional selection cannot be called", node.target.end)
        stack.extend((child, level + 1) for child in children(node))


def _balanced(operands: list[Node], positions: list[int], kind: str) -> Node:
    if len(operands) == 1:
        return operands[0]
    middle = len(operands) // 2
    left = _balanced(operands[:middle], positions[: middle - 1], kind)
    right = _balanced(operands[middle:], positions[middle:], kind)
    return Operator(left.start, right.end, kind, [left, right], positions[middle - 1])


def children(node: Node) -> list[Node]:
    """The direct sub-expressions of a node, in source order."""
    if isinstance(node, Select):
        return [node.operand] if node.operand is not None else []
    if isinstance(node, Index):
        return [item for item in (node.operand, node.key) if item is not None]
    if isinstance(node, Call):
        return ([node.target] if node.target is not None else []) + node.args
    if isinstance(node, Aggregate):
        return node.children
    if isinstance(node, Operator):
        return node.operands
    return []


def depth(root: Node) -> int:
    """The depth of a tree, without recursing on it."""
    deepest = 0
    stack = [(root, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children(node))
    return deepest


def parse(text: str, *, limit: int = MAX_NESTING) -> Node:
    """Parse a CEL expression; raises :class:`CelSyntaxError` if it cannot be parsed here, and
    :class:`CelNestingError` if the tree is deeper than ``limit`` (:data:`MAX_NESTING`; our own
    rewrites of an accepted selector are parsed again with a higher one).

    Neither Lark's LALR parser nor anything here recurses on the input's depth.
    """
    prepared, marks = _prepare(text)
    node = _build(prepared, limit)
    _complete(node, text, marks, limit)
    return node
