"""Structural chunking: real boundaries, exact line ranges, qualified symbols."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from indexer.source.chunking import MAX_LINES, chunk_file, split_lines
from indexer.source.languages import GRAMMARS, kind_for, language_for

SNIPPETS = Path(__file__).parent / "fixtures" / "snippets"


def spans(name: str) -> list[tuple[int, int, str]]:
    language = language_for(name)
    assert language is not None
    data = (SNIPPETS / name).read_bytes()
    return [(c.start_line, c.end_line, c.symbol) for c in chunk_file(name, language, data)]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "app.js",
            [
                (1, 1, "http"),
                (3, 9, "app.use"),  # doc comment included, assignment of a function
                (11, 11, "DEFAULT_PORT"),
                (13, 15, "listen"),
                (17, 25, "Router"),
                (27, 29, "handler"),
            ],
        ),
        (
            "bucket.go",
            [
                (1, 3, "<module>"),
                (5, 9, "TokenBucket"),
                (11, 18, "TokenBucket.Allow"),
                (20, 22, "New"),
            ],
        ),
        ("RetryService.java", [(1, 3, "<module>"), (5, 20, "RetryService")]),
        ("point.rs", [(1, 1, "<module>"), (3, 7, "Point"), (9, 13, "Point"), (15, 17, "distance")]),
        ("invoice.rb", [(1, 12, "Billing")]),
        ("buffer.c", [(1, 1, "<module>"), (3, 6, "buffer"), (8, 12, "buffer_append")]),
        ("socket.cpp", [(1, 1, "<module>"), (3, 19, "net")]),
        ("Cart.cs", [(1, 1, "<module>"), (3, 14, "Shop")]),
        ("cart.kt", [(1, 1, "<module>"), (3, 7, "Cart"), (9, 11, "checkout")]),
        ("UserController.php", [(1, 3, "<module>"), (5, 11, "UserController"), (13, 15, "helper")]),
        ("cache.swift", [(1, 1, "<module>"), (3, 7, "Cache"), (9, 11, "makeCache")]),
        ("counter.dart", [(1, 1, "<module>"), (3, 5, "add"), (7, 13, "Counter")]),
        ("App.tsx", [(1, 1, "<module>"), (3, 5, "Props"), (7, 9, "Greeting"), (11, 15, "App")]),
        (
            "README.md",
            [(1, 3, "README > Project"), (5, 11, "README > Install"), (13, 15, "README > Usage")],
        ),
    ],
)
def test_small_files_chunk_along_definitions(
    name: str, expected: list[tuple[int, int, str]]
) -> None:
    assert spans(name) == expected


def _python_class(methods: int) -> str:
    body = []
    for i in range(methods):
        body += [
            f"    def method_{i}(self, value):",
            f'        """Doc {i}."""',
            f"        return value + {i}",
            "",
        ]
    return "\n".join(
        ["import os", "", "", "@dataclass", "class Big(Base):", '    """A big class."""', "", *body]
    )


def test_large_python_class_is_chunked_by_method_with_decorators_and_header() -> None:
    text = _python_class(20)
    chunks = chunk_file("pkg/big.py", "python", text.encode())
    by_symbol = {c.symbol: c for c in chunks}
    assert "Big.method_0" in by_symbol and "Big.method_19" in by_symbol
    first = by_symbol["Big.method_0"]
    assert (first.start_line, first.end_line) == (8, 10)
    assert "class Big(Base):" in first.header  # enclosing signature for context
    assert "import" not in first.header  # it uses no imported name
    head = by_symbol["Big"]
    assert head.start_line == 4  # the decorator belongs to the class
    assert head.text.startswith("@dataclass\nclass Big(Base):")


def test_header_lists_only_the_imports_a_chunk_uses() -> None:
    src = (
        "import os\nfrom pathlib import Path\nfrom typing import Any\n\n\n"
        "def home() -> Path:\n    return Path(os.environ['HOME'])\n\n\n"
        "def double(x):\n    return 2 * x\n"
    )
    by_symbol = {c.symbol: c for c in chunk_file("paths.py", "python", src.encode())}
    assert (
        by_symbol["home"].header.splitlines()[-1] == "imports: import os; from pathlib import Path"
    )
    assert "import" not in by_symbol["double"].header
    js = "const express = require('express');\nimport { join } from 'path';\n\nfunction app() {\n  return express();\n}\n"
    (app,) = [c for c in chunk_file("app.js", "javascript", js.encode()) if c.symbol == "app"]
    assert app.header.splitlines()[-1] == "imports: const express = require('express')"


def test_decorated_function_keeps_decorator_and_comment() -> None:
    src = (
        "import x\n\n\n# Retries the call.\n@retry(3)\n@log\ndef fetch(url):\n    return get(url)\n"
    )
    (chunk,) = [c for c in chunk_file("f.py", "python", src.encode()) if c.symbol == "fetch"]
    assert (chunk.start_line, chunk.end_line) == (4, 8)


def test_giant_function_is_split_at_statement_boundaries() -> None:
    lines = ["def giant():"] + [f"    x{i} = compute({i})" for i in range(300)] + ["    return x0"]
    chunks = chunk_file("g.py", "python", "\n".join(lines).encode())
    assert len(chunks) >= 3
    assert all(c.symbol == "giant" for c in chunks)
    assert all(c.end_line - c.start_line + 1 <= MAX_LINES for c in chunks)
    assert chunks[0].start_line == 1 and chunks[-1].end_line == len(lines)
    covered = sorted(line for c in chunks for line in range(c.start_line, c.end_line + 1))
    assert covered == list(range(1, len(lines) + 1))  # no line lost, none repeated


def test_config_files_split_by_top_level_key() -> None:
    deps = "\n".join(f'    "dep{i}": "^1.0.{i}",' for i in range(70))
    src = f'{{\n  "name": "demo",\n  "scripts": {{\n    "test": "jest"\n  }},\n  "dependencies": {{\n{deps}\n    "last": "1"\n  }}\n}}\n'
    chunks = chunk_file("package.json", "json", src.encode())
    symbols = [c.symbol for c in chunks]
    assert "package.json > scripts" in symbols
    assert "package.json > dependencies" in symbols
    yaml_src = "\n".join(
        ["name: ci", "on:", "  push: {}"]
        + ["jobs:"]
        + [f"  job{i}:\n    runs-on: x" for i in range(40)]
    )
    ychunks = chunk_file("ci.yml", "yaml", yaml_src.encode())
    assert any(c.symbol == "ci.yml > jobs" for c in ychunks)


def test_small_config_is_one_chunk_and_kind_is_config() -> None:
    (chunk,) = chunk_file("pyproject.toml", "toml", b'[project]\nname = "x"\n')
    assert chunk.symbol == "pyproject.toml"
    assert chunk.kind == "config"


def test_kinds_from_paths() -> None:
    assert kind_for("tests/test_api.py", "python") == "test"
    assert kind_for("src/app.test.ts", "typescript") == "test"
    assert kind_for("docs/guide.md", "markdown") == "docs"
    assert kind_for("src/Foo.java", "java") == "source"
    assert kind_for("src/test/java/FooTest.java", "java") == "test"


def test_broken_utf8_is_decoded_with_replacement() -> None:
    data = b"def ok():\n    return '\xff\xfe broken'\n"
    (chunk,) = chunk_file("b.py", "python", data)
    assert chunk.symbol == "ok"
    assert "\ufffd" in chunk.text


def test_empty_and_whitespace_files_have_no_chunks() -> None:
    assert chunk_file("e.py", "python", b"") == []
    assert chunk_file("e.md", "markdown", b"\n\n  \n") == []


# One definition-rich file per grammar; each name below comes from that grammar's name table.
_NAMED_DEFINITIONS = {
    "python": ("class Cart:\n    pass\n\n\ndef total(items):\n    return 0\n", ["Cart", "total"]),
    "javascript": (
        "const add = (a, b) => a + b;\n\nrouter.get = function (path) {};\n\n"
        "module.exports = class Application {};\n\nexport function start() {}\n",
        ["add", "router.get", "Application", "start"],
    ),
    "typescript": (
        "interface Props {\n  name: string;\n}\n\ntype Id = string;\n\nenum Color { Red }\n",
        ["Props", "Id", "Color"],
    ),
    "tsx": (
        "export const App = () => <div />;\n\nfunction Greeting() {\n  return null;\n}\n",
        ["App", "Greeting"],
    ),
    "go": (
        "package m\n\ntype Bucket struct {\n\tn int\n}\n\n"
        "func (b *Bucket) Take() bool {\n\treturn true\n}\n\nfunc New() *Bucket {\n\treturn nil\n}\n",
        ["Bucket", "Bucket.Take", "New"],
    ),
    "java": (
        "class Retry {\n  int attempts() { return 1; }\n}\n\ninterface Policy {}\n",
        ["Retry", "Policy"],
    ),
    "rust": (
        "struct Point {\n    x: f64,\n}\n\nimpl Display for Point {\n    fn fmt(&self) {}\n}\n\n"
        "fn distance() -> f64 {\n    0.0\n}\n",
        ["Point", "Point", "distance"],
    ),
    "ruby": (
        "class Invoice\nend\n\nmodule Billing\nend\n\ndef total\n  0\nend\n",
        ["Invoice", "Billing", "total"],
    ),
    "c": (
        "struct buffer {\n    int len;\n};\n\nchar *buffer_data(struct buffer *b) {\n"
        "    return 0;\n}\n\ntypedef int handle;\n",
        ["buffer", "buffer_data", "handle"],
    ),
    "cpp": (
        "namespace net {\nint open();\n}\n\nint Socket::send(int n) {\n    return n;\n}\n\n"
        "Socket::~Socket() {\n}\n",
        ["net", "Socket::send", "Socket::~Socket"],
    ),
    "csharp": (
        "class Cart\n{\n    public int Total { get; set; }\n}\n\ninterface IShop\n{\n}\n",
        ["Cart", "IShop"],
    ),
    "kotlin": (
        "class Cart {\n    val items = 0\n}\n\nfun checkout(cart: Cart) {\n    println(cart)\n}\n",
        ["Cart", "checkout"],
    ),
    "php": (
        "<?php\nclass UserController\n{\n}\n\nfunction helper()\n{\n}\n",
        ["UserController", "helper"],
    ),
    "swift": (
        "class Cache {\n    var size = 0\n}\n\nfunc makeCache() -> Cache {\n    return Cache()\n}\n",
        ["Cache", "makeCache"],
    ),
    "dart": (
        "int add(int a, int b) {\n  return a + b;\n}\n\nclass Counter {\n  int value = 0;\n}\n",
        ["add", "Counter"],
    ),
}


def _symbols(language: str, source: str) -> list[str]:
    chunks = chunk_file(f"m.{language}", language, source.encode())
    return [s for c in chunks for s in c.symbol.split(", ") if s != "<module>"]


def test_every_grammar_has_a_file_whose_definitions_are_named() -> None:
    assert sorted(_NAMED_DEFINITIONS) == sorted(GRAMMARS)


@pytest.mark.parametrize("language", sorted(_NAMED_DEFINITIONS))
def test_definitions_are_known_by_their_own_names(language: str) -> None:
    source, names = _NAMED_DEFINITIONS[language]
    assert _symbols(language, source) == names


@pytest.mark.parametrize("language", sorted(GRAMMARS))
def test_name_table_uses_only_fields_and_nodes_the_grammar_has(language: str) -> None:
    from tree_sitter_language_pack import get_language

    grammar_language = get_language(language)  # type: ignore[arg-type]
    grammar = GRAMMARS[language]
    rules = grammar.names.values()
    fields = {*grammar.name_fields, *(r.field for r in rules)}
    fields |= {r.qualifier for r in rules if r.qualifier is not None}
    assert {f for f in fields if grammar_language.field_id_for_name(f) is None} == set()
    kinds = {*grammar.names, *grammar.name_children}
    assert {k for k in kinds if grammar_language.id_for_node_kind(k, True) is None} == set()


def test_dart_methods_are_named_through_their_signatures() -> None:
    methods = [f"  void step{i}() {{\n    value += {i};\n  }}\n" for i in range(12)]
    source = "class Counter {\n  int value = 0;\n\n" + "\n".join(methods) + "}\n"
    assert [f"Counter.step{i}" for i in range(12)] == [
        s for s in _symbols("dart", source) if s.startswith("Counter.step")
    ]


_LANG_SAMPLES = {
    "python": "def f(a):\n    return a\n\nclass C:\n    def m(self):\n        pass\n",
    "javascript": "function f() {\n  return 1;\n}\nconst g = () => 2;\n",
    "go": "package p\n\nfunc F() int {\n\treturn 1\n}\n",
    "markdown": "# T\n\ntext\n\n## S\n\nmore\n",
    "yaml": "a: 1\nb:\n  c: 2\n",
    "text": "some\nplain\ntext\n",
}


@settings(max_examples=150, deadline=None)
@given(
    language=st.sampled_from(sorted(_LANG_SAMPLES)),
    noise=st.lists(
        st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=40), max_size=60
    ),
    cut=st.integers(min_value=0, max_value=200),
)
def test_chunk_text_is_exactly_its_line_range(language: str, noise: list[str], cut: int) -> None:
    """Invariant: every chunk's text is exactly lines start..end of the decoded file."""
    base = _LANG_SAMPLES[language]
    text = base[: cut % (len(base) + 1)] + "\n".join(noise) + base[cut % (len(base) + 1) :]
    data = text.encode("utf-8", "surrogatepass")
    lines = split_lines(data.decode("utf-8", "replace"))
    for chunk in chunk_file(f"x.{language}", language, data):
        assert 1 <= chunk.start_line <= chunk.end_line <= len(lines)
        assert chunk.text == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
        assert chunk.text.strip()
