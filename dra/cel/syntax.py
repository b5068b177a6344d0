"""A small CEL parser that keeps source positions, for static analysis of DRA selectors.

It produces just enough of an AST to answer two questions about an expression without
evaluating it: which parts of ``device`` it reads (so results can be cached per distinct value
tuple) and where ``device.attributes[...]`` / ``device.capacity[...]`` lookups are (so they can
be given Kubernetes' "unknown domain is an empty map" behaviour). Evaluation itself is done by
cel-expr-python in :mod:`dra.cel`; when this parser cannot parse something the
caller falls back to conservative behaviour, it never decides validity.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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
    """This parser could not parse the expression (cel-expr-python will report the real error)."""


class CelNestingError(CelSyntaxError):
    """The expression nests deeper than :data:`MAX_NESTING` (a compile error of its own).

    The parser and every walk over its tree recurse once per level, so the depth is bounded
    before anything recurses on it; cel-cpp itself stops at 32 levels.
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


_PUNCTUATION = (
    "&&", "||", "==", "!=", "<=", ">=", "<", ">", "!", "-", "+", "*", "/", "%",
    ".", ",", "(", ")", "[", "]", "{", "}", "?", ":",
)  # fmt: skip
_ESCAPES = {
    "a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
    "\\": "\\", "'": "'", '"': '"', "`": "`", "?": "?",
}  # fmt: skip


@dataclass(slots=True)
class _Token:
    kind: str  # "ident", "int", "uint", "double", "string", "bytes", "eof" or the punctuation
    text: str
    start: int
    end: int
    value: Any = None


def _decode(body: str) -> str:
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
            raise CelSyntaxError(f"invalid escape at {index}")
    return "".join(result)


def _string_token(text: str, start: int, prefix_end: int, prefix: str) -> _Token:
    raw = "r" in prefix.lower()
    quote = text[prefix_end : prefix_end + 3]
    if quote not in ('"""', "'''"):
        quote = text[prefix_end]
    index = prefix_end + len(quote)
    while True:
        if index >= len(text):
            raise CelSyntaxError("unterminated string")
        if text.startswith(quote, index):
            break
        if text[index] == "\\" and not raw:
            index += 2
            continue
        if len(quote) == 1 and text[index] == "\n":
            raise CelSyntaxError("newline in string")
        index += 1
    body = text[prefix_end + len(quote) : index]
    end = index + len(quote)
    value = body if raw else _decode(body)
    kind = "bytes" if "b" in prefix.lower() else "string"
    return _Token(kind, text[start:end], start, end, value)


def _tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    index = 0
    length = len(text)
    while index < length:
        character = text[index]
        if character in " \t\n\r\f":
            index += 1
            continue
        if text.startswith("//", index):
            newline = text.find("\n", index)
            index = length if newline < 0 else newline
            continue
        start = index
        if character.isalpha() or character == "_":
            while index < length and (text[index].isalnum() or text[index] == "_"):
                index += 1
            word = text[start:index]
            if index < length and text[index] in "'\"" and word.lower() in ("r", "b", "rb", "br"):
                token = _string_token(text, start, index, word)
                tokens.append(token)
                index = token.end
                continue
            tokens.append(_Token("ident", word, start, index))
            continue
        if character in "'\"":
            token = _string_token(text, start, index, "")
            tokens.append(token)
            index = token.end
            continue
        previous_is_operand = bool(tokens) and tokens[-1].kind in (
            "ident", "int", "uint", "double", "string", "bytes", ")", "]", "}",
        )  # fmt: skip
        starts_number = character.isdigit() or (
            character == "." and index + 1 < length and text[index + 1].isdigit()
            and not previous_is_operand
        )  # fmt: skip
        if starts_number:
            tokens.append(_number(text, index))
            index = tokens[-1].end
            continue
        for punctuation in _PUNCTUATION:
            if text.startswith(punctuation, index):
                tokens.append(_Token(punctuation, punctuation, index, index + len(punctuation)))
                index += len(punctuation)
                break
        else:
            raise CelSyntaxError(f"unexpected character {character!r} at {index}")
    tokens.append(_Token("eof", "", length, length))
    return tokens


def _number(text: str, start: int) -> _Token:
    index = start
    length = len(text)
    if text.startswith(("0x", "0X"), index):
        index += 2
        while index < length and text[index] in "0123456789abcdefABCDEF":
            index += 1
        value = int(text[start + 2 : index], 16)
        if index < length and text[index] in "uU":
            return _Token("uint", text[start : index + 1], start, index + 1, value)
        return _Token("int", text[start:index], start, index, value)
    while index < length and text[index].isdigit():
        index += 1
    is_double = False
    if index < length - 1 and text[index] == "." and text[index + 1].isdigit():
        is_double = True
        index += 1
        while index < length and text[index].isdigit():
            index += 1
    if index < length and text[index] in "eE":
        probe = index + 1
        if probe < length and text[probe] in "+-":
            probe += 1
        if probe < length and text[probe].isdigit():
            is_double = True
            index = probe
            while index < length and text[index].isdigit():
                index += 1
    if is_double:
        return _Token("double", text[start:index], start, index, float(text[start:index]))
    if index < length and text[index] in "uU":
        return _Token("uint", text[start : index + 1], start, index + 1, int(text[start:index]))
    return _Token("int", text[start:index], start, index, int(text[start:index]))


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.position = 0
        self.depth = 0

    @property
    def current(self) -> _Token:
        return self.tokens[self.position]

    def accept(self, kind: str) -> _Token | None:
        token = self.tokens[self.position]
        if token.kind == kind:
            self.position += 1
            return token
        return None

    def expect(self, kind: str) -> _Token:
        token = self.accept(kind)
        if token is None:
            raise CelSyntaxError(f"expected {kind!r} at {self.current.start}")
        return token

    def expression(self) -> Node:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise CelNestingError
        try:
            return self.conditional()
        finally:
            self.depth -= 1

    def conditional(self) -> Node:
        condition = self.binary(0)
        if self.current.kind == "?":
            position = self.current.start
            self.position += 1
            when_true = self.binary(0)
            self.expect(":")
            when_false = self.expression()
            return Operator(
                condition.start, when_false.end, "?:", [condition, when_true, when_false], position
            )
        return condition

    _LEVELS = (
        ("||",),
        ("&&",),
        ("<", "<=", ">", ">=", "==", "!=", "in"),
        ("+", "-"),
        ("*", "/", "%"),
    )

    def binary(self, level: int) -> Node:
        if level == len(self._LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        if self._LEVELS[level][0] in ("||", "&&"):
            return self.logical(left, self._LEVELS[level][0], level)
        while True:
            token = self.current
            kind = "in" if token.kind == "ident" and token.text == "in" else token.kind
            if kind not in self._LEVELS[level]:
                return left
            self.position += 1
            right = self.binary(level + 1)
            left = Operator(left.start, right.end, kind, [left, right], token.start)

    def logical(self, first: Node, kind: str, level: int) -> Node:
        """A chain of ``&&`` or ``||``, as a balanced tree (as cel-go and cel-cpp build it)."""
        operands = [first]
        positions = []
        while self.current.kind == kind:
            positions.append(self.current.start)
            self.position += 1
            operands.append(self.binary(level + 1))
        return _balanced(operands, positions, kind)

    def unary(self) -> Node:
        operators = []
        while self.current.kind in ("!", "-"):
            operators.append(self.current)
            self.position += 1
        node = self.member()
        for token in reversed(operators):
            node = Operator(token.start, node.end, token.kind, [node], token.start)
        return node

    def member(self) -> Node:
        node = self.primary()
        while True:
            token = self.current
            if token.kind == ".":
                self.position += 1
                optional = self.accept("?") is not None
                name = self.expect("ident")
                if not optional and self.current.kind == "(":
                    args, end = self.arguments()
                    node = Call(node.start, end, node, name.text, args)
                else:
                    node = Select(node.start, name.end, node, name.text, token.start, optional)
            elif token.kind == "[":
                self.position += 1
                optional = self.accept("?") is not None
                key = self.expression()
                end = self.expect("]").end
                node = Index(node.start, end, node, key, token.start, optional)
            elif token.kind == "{" and isinstance(node, Ident | Select):
                children, end = self.entries("}", fields=True)
                node = Aggregate(node.start, end, children)
            else:
                return node

    def arguments(self) -> tuple[list[Node], int]:
        self.expect("(")
        args: list[Node] = []
        if self.current.kind != ")":
            args.append(self.expression())
            while self.accept(","):
                args.append(self.expression())
        return args, self.expect(")").end

    def entries(self, closing: str, fields: bool) -> tuple[list[Node], int]:
        self.position += 1
        children: list[Node] = []
        while self.current.kind != closing:
            self.accept("?")
            if fields:
                self.expect("ident")
            else:
                children.append(self.expression())
            self.expect(":")
            children.append(self.expression())
            if not self.accept(","):
                break
        return children, self.expect(closing).end

    def primary(self) -> Node:
        token = self.current
        self.position += 1
        if token.kind == "ident":
            if token.text in ("true", "false"):
                return Literal(token.start, token.end, "bool", token.text == "true")
            if token.text == "null":
                return Literal(token.start, token.end, "null", None)
            if self.current.kind == "(":
                args, end = self.arguments()
                return Call(token.start, end, None, token.text, args)
            return Ident(token.start, token.end, token.text)
        if token.kind == "." and self.current.kind == "ident":
            name = self.expect("ident")
            if self.current.kind == "(":
                args, end = self.arguments()
                return Call(token.start, end, None, name.text, args)
            return Ident(token.start, name.end, name.text)
        if token.kind in ("int", "uint", "double", "string", "bytes"):
            return Literal(token.start, token.end, token.kind, token.value)
        if token.kind == "(":
            inner = self.expression()
            end = self.expect(")").end
            inner_copy = inner
            return Operator(token.start, end, "()", [inner_copy], token.start)
        if token.kind == "[":
            children: list[Node] = []
            while self.current.kind != "]":
                self.accept("?")
                children.append(self.expression())
                if not self.accept(","):
                    break
            return Aggregate(token.start, self.expect("]").end, children)
        if token.kind == "{":
            self.position -= 1
            children, end = self.entries("}", fields=False)
            return Aggregate(token.start, end, children)
        raise CelSyntaxError(f"unexpected {token.kind!r} at {token.start}")


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


def parse(text: str) -> Node:
    """Parse a CEL expression; raises :class:`CelSyntaxError` if this parser cannot, and
    :class:`CelNestingError` if the tree is deeper than :data:`MAX_NESTING`."""
    parser = _Parser(text)
    node = parser.expression()
    if parser.current.kind != "eof":
        raise CelSyntaxError(f"unexpected {parser.current.kind!r} at {parser.current.start}")
    if depth(node) > MAX_NESTING:
        raise CelNestingError
    return node
