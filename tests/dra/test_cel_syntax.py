"""CEL syntax trees for static analysis: node shapes and source positions, syntax errors with
their positions, the nesting limit, and inputs built to exhaust the parser."""

import sys
from contextlib import contextmanager

import pytest

from dra.cel.syntax import (
    MAX_NESTING,
    Aggregate,
    Call,
    CelNestingError,
    CelSyntaxError,
    Ident,
    Index,
    Literal,
    Node,
    Operator,
    Select,
    depth,
    parse,
)


def _shape(node: Node | None) -> str:
    """A tree as text: every node with its [start:end) span, selects and indexes with the
    position of their "." or "[" (and "?" when optional), operators with theirs."""
    assert node is not None
    span = f"{node.start}:{node.end}"
    if isinstance(node, Ident):
        return f"{node.name}@{span}"
    if isinstance(node, Literal):
        return f"{node.kind} {node.value!r}@{span}"
    if isinstance(node, Select):
        optional = "?" if node.optional else ""
        return f"({_shape(node.operand)} .{optional}{node.field} .@{node.dot})@{span}"
    if isinstance(node, Index):
        optional = "?" if node.optional else ""
        return f"({_shape(node.operand)} [{optional}{_shape(node.key)}] [@{node.bracket})@{span}"
    if isinstance(node, Call):
        target = _shape(node.target) + "." if node.target is not None else ""
        return f"{target}{node.function}({', '.join(_shape(a) for a in node.args)})@{span}"
    if isinstance(node, Aggregate):
        return f"{{{', '.join(_shape(child) for child in node.children)}}}@{span}"
    assert isinstance(node, Operator)
    operands = ", ".join(_shape(operand) for operand in node.operands)
    return f"{node.operator}@{node.position}({operands})@{span}"


@pytest.mark.parametrize(
    ("expression", "shape"),
    [
        # Literals: every form cel-go's lexer reads, with the value the analysis keys on.
        ("1", "int 1@0:1"),
        ("1u", "uint 1@0:2"),
        ("0x1F", "int 31@0:4"),
        ("0x1Fu", "uint 31@0:5"),
        ("1e3", "double 1000.0@0:3"),
        ("1.5e-3", "double 0.0015@0:6"),
        (".5", "double 0.5@0:2"),
        ("true", "bool True@0:4"),
        ("null", "null None@0:4"),
        ('"a\\nb"', "string 'a\\nb'@0:6"),
        ("'single'", "string 'single'@0:8"),
        ('r"raw\\d"', "string 'raw\\\\d'@0:8"),
        ("R'raw'", "string 'raw'@0:6"),
        ('"""two\nlines"""', "string 'two\\nlines'@0:15"),
        ("'''it's'''", 'string "it\'s"@0:10'),
        ('b"bytes"', "bytes 'bytes'@0:8"),
        ("B'\\x41'", "bytes 'A'@0:7"),
        ('br"\\n"', "bytes '\\\\n'@0:6"),
        ('"\\u00e9\\U0001F600\\101\\X41"', "string 'é😀AA'@0:26"),
        ('"\\?\\`\\"\\\'"', "string '?`\"\\''@0:10"),
        ('"a \\" // ?, ]"', "string 'a \" // ?, ]'@0:14"),
        # A leading minus is an operator, as in cel-go (celpy's grammar folds it in).
        ("-1", "-@0(int 1@1:2)@0:2"),
        ("--1", "-@0(-@1(int 1@2:3)@1:3)@0:3"),
        ("-0x10", "-@0(int 16@1:5)@0:5"),
        ("-1.5", "-@0(double 1.5@1:4)@0:4"),
        ("x - -1", "-@2(x@0:1, -@4(int 1@5:6)@4:6)@0:6"),
        ("x-1", "-@1(x@0:1, int 1@2:3)@0:3"),
        # Selections, indexes, calls, qualified names and leading dots.
        (
            "device.driver",
            "(device@0:6 .driver .@6)@0:13",
        ),
        (
            'device.attributes["gpu.nvidia.com"].productName',
            "(((device@0:6 .attributes .@6)@0:17 [string 'gpu.nvidia.com'@18:34] [@17)@0:35"
            " .productName .@35)@0:47",
        ),
        ("a[0].b", "((a@0:1 [int 0@2:3] [@1)@0:4 .b .@4)@0:6"),
        ("a.b.c(d)[e]", "((a@0:1 .b .@1)@0:3.c(d@6:7)@0:8 [e@9:10] [@8)@0:11"),
        (".a.b", "(a@0:2 .b .@2)@0:4"),
        (".f(1)", "f(int 1@3:4)@0:5"),
        ("lists.range(3)", "lists@0:5.range(int 3@12:13)@0:14"),
        (
            "sets.contains([1], [1])",
            "sets@0:4.contains({int 1@15:16}@14:17, {int 1@20:21}@19:22)@0:23",
        ),
        ('strings.quote("a")', "strings@0:7.quote(string 'a'@14:17)@0:18"),
        ("dyn(1)", "dyn(int 1@4:5)@0:6"),
        ("cel.bind(x, 1, x)", "cel@0:3.bind(x@9:10, int 1@12:13, x@15:16)@0:17"),
        # Macros with two and three arguments are calls like any other.
        ("l.all(i, v, i < v)", "l@0:1.all(i@6:7, v@9:10, <@14(i@12:13, v@16:17)@12:17)@0:18"),
        ("1.size()", "int 1@0:1.size()@0:8"),  # cel-go's grammar: no float without a digit
        (
            "l.transformList(i, v, i < 2, v)",
            "l@0:1.transformList(i@16:17, v@19:20, <@24(i@22:23, int 2@26:27)@22:27, v@29:30)@0:31",
        ),
        ("l.exists_one(x, x)", "l@0:1.exists_one(x@13:14, x@16:17)@0:18"),
        # Optional syntax: "?" noted on selects and indexes, dropped in literals (as before).
        ("a.?b", "(a@0:1 .?b .@1)@0:4"),
        ("a. ?b", "(a@0:1 .?b .@1)@0:5"),
        ('a[?"k"]', "(a@0:1 [?string 'k'@3:6] [@1)@0:7"),
        ("a.?b.orValue(1)", "(a@0:1 .?b .@1)@0:4.orValue(int 1@13:14)@0:15"),
        ("[?x, 1]", "{x@2:3, int 1@5:6}@0:7"),
        ('{?"k": v}', "{string 'k'@2:5, v@7:8}@0:9"),
        ("M{?f: 1}", "{int 1@6:7}@0:8"),
        ("'?' == x.?y", "==@4(string '?'@0:3, (x@7:8 .?y .@8)@7:11)@0:11"),
        # Aggregates, trailing commas and messages.
        ("[1, 2,]", "{int 1@1:2, int 2@4:5}@0:7"),
        ('{"a": 1,}', "{string 'a'@1:4, int 1@6:7}@0:9"),
        ("M{f: 1,}", "{int 1@5:6}@0:8"),
        ("a.M{f: 1}", "{int 1@7:8}@0:9"),
        ("[]", "{}@0:2"),
        ("{}", "{}@0:2"),
        # Operators: precedence, balanced && / || runs (as cel-go builds them), ternaries.
        ("(x)", "()@0(x@1:2)@0:3"),
        ("!!a", "!@0(!@1(a@2:3)@1:3)@0:3"),
        ("a + b * c", "+@2(a@0:1, *@6(b@4:5, c@8:9)@4:9)@0:9"),
        ("x in [1]", "in@2(x@0:1, {int 1@6:7}@5:8)@0:8"),
        ("in_x", "in_x@0:4"),
        ("true && false", "&&@5(bool True@0:4, bool False@8:13)@0:13"),
        (
            "a && b && c && d",
            "&&@7(&&@2(a@0:1, b@5:6)@0:6, &&@12(c@10:11, d@15:16)@10:16)@0:16",
        ),
        ("a || b && c", "||@2(a@0:1, &&@7(b@5:6, c@10:11)@5:11)@0:11"),
        ("(a && b) && c", "&&@9(()@0(&&@3(a@1:2, b@6:7)@1:7)@0:8, c@12:13)@0:13"),
        ("a ? b : c ? d : e", "?:@2(a@0:1, b@4:5, ?:@10(c@8:9, d@12:13, e@16:17)@8:17)@0:17"),
        # Comments and line breaks are skipped, whatever they contain.
        ("a // comment ?, ]\n && b", "&&@19(a@0:1, b@22:23)@0:23"),
        ('"a // b" == x', "==@9(string 'a // b'@0:8, x@12:13)@0:13"),
        ("a\n&&\r\nb", "&&@2(a@0:1, b@6:7)@0:7"),
    ],
)
def test_it_builds_the_tree_with_source_positions(expression, shape):
    assert _shape(parse(expression)) == shape


@pytest.mark.parametrize(
    ("expression", "position"),
    [
        ("", 0),
        ("1 +", 3),
        (")", 0),
        ("1 2", 2),
        ("a..b", 2),
        ('"unterminated', 0),
        ("x == 'abc", 5),
        ('x == "' + "\\n" * 3, 5),
        ('"\\q"', 0),  # not an escape
        ("a.?b()", 1),  # an optional selection is not a call
        ("a ? b ? c : d : e", 6),  # the middle of a ternary is not a ternary (cel-go's grammar)
        ("f(1,)", 4),  # no trailing comma in arguments
        ("[,]", 1),
        ("x.true", 2),  # true is a literal, not a field name
        ("a.`b-c`", 2),  # escaped field names are not enabled in Kubernetes' environment
        ("1.", 2),  # a float needs a digit after its dot (CEL's grammar, not celpy's)
        ('rb"x"', 2),  # bytes take the b first
    ],
)
def test_a_syntax_error_names_where_parsing_stopped(expression, position):
    with pytest.raises(CelSyntaxError) as raised:
        parse(expression)
    assert not isinstance(raised.value, CelNestingError)
    assert raised.value.position == position


@pytest.mark.parametrize(
    ("construct", "deeper"),
    [
        ("parentheses", lambda n: "(" * (n - 1) + "x" + ")" * (n - 1)),
        ("lists", lambda n: "[" * (n - 1) + "x" + "]" * (n - 1)),
        ("calls", lambda n: "f(" * (n - 1) + "x" + ")" * (n - 1)),
        ("unary operators", lambda n: "!" * (n - 1) + "x"),
        ("selections", lambda n: "a" + ".b" * (n - 1)),
        ("optional selections", lambda n: "a" + ".?b" * (n - 1)),
        ("additions", lambda n: "1" + " + 1" * (n - 1)),
        ("ternaries", lambda n: "a ? b : " * (n - 1) + "c"),
    ],
)
def test_the_nesting_limit_is_exact(construct, deeper):
    assert depth(parse(deeper(MAX_NESTING))) == MAX_NESTING
    with pytest.raises(CelNestingError, match="nesting exceeds the limit of 50 levels"):
        parse(deeper(MAX_NESTING + 1))


def test_runs_of_and_or_are_balanced_not_nested():
    assert depth(parse(" && ".join(["x"] * 1000))) == 11


def test_too_many_open_brackets_are_nesting_even_before_the_text_ends():
    with pytest.raises(CelNestingError):
        parse("(" * (MAX_NESTING + 1) + "x")


TEN_KIB = 10 * 1024


@pytest.mark.parametrize(
    "expression",
    [
        "(" * (TEN_KIB // 2) + "x" + ")" * (TEN_KIB // 2),
        "(" * TEN_KIB,
        "{1: " * (TEN_KIB // 4) + "1" + "}" * (TEN_KIB // 4),
        "a[" * (TEN_KIB // 3) + "0" + "]" * (TEN_KIB // 3),
        "!" * TEN_KIB + "x",
        "-" * TEN_KIB + "1",
        "a" + ".b" * (TEN_KIB // 2),
        "a" + ".?b" * (TEN_KIB // 3),
        "1" + "+1" * (TEN_KIB // 2),
        "a?b:" * (TEN_KIB // 4) + "c",
    ],
)
def test_a_10_kib_nested_selector_is_a_nesting_error_never_a_recursion_error(
    expression, shallow_stack
):
    # A parser that recursed once per level would need thousands of frames here.
    with shallow_stack, pytest.raises(CelNestingError):
        parse(expression)


def test_a_10_kib_flat_selector_parses_without_deep_recursion(shallow_stack):
    with shallow_stack:
        tree = parse(" || ".join(["x && y"] * (TEN_KIB // 10)))
    assert isinstance(tree, Operator)
    assert tree.operator == "||"


def test_an_unterminated_string_full_of_escapes_answers_at_once():
    # celpy's string terminals backtrack exponentially here (doubling per escape); the
    # strings are read before the grammar sees them, so this returns in microseconds.
    with pytest.raises(CelSyntaxError, match="unterminated string"):
        parse('device.driver == "' + "\\n" * 64)


def test_brackets_inside_strings_and_comments_are_not_nesting():
    text = '"' + "(" * 100 + '" == x // ' + "[" * 100
    assert _shape(parse(text)) == "==@103(string '" + "(" * 100 + "'@0:102, x@106:107)@0:107"


@pytest.fixture
def shallow_stack():
    """A context in which only 100 more Python frames fit than the caller's."""
    parse("x")  # the grammar is loaded once per process, outside the limit

    @contextmanager
    def limited():
        frame, frames = sys._getframe(), 0
        while frame is not None:
            frame, frames = frame.f_back, frames + 1
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(frames + 100)
        try:
            yield
        finally:
            sys.setrecursionlimit(limit)

    return limited()
