"""Which language a file is in, what kind of file it is, and how its grammar names things.

Language support is data: each grammar lists the node types that are definitions,
which of them contain other definitions, which merely wrap one, and where each keeps
its name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath

EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".java": "java",
    ".rs": "rust",
    ".rb": "ruby",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    ".cs": "csharp",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".php": "php",
    ".swift": "swift",
    ".dart": "dart",
    ".md": "markdown",
    ".markdown": "markdown",
    ".rst": "text",
    ".txt": "text",
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".cfg": "ini",
    ".ini": "ini",
    ".sh": "shell",
    ".bash": "shell",
    ".sql": "sql",
    ".html": "html",
    ".css": "css",
    ".scss": "css",
    ".xml": "xml",
    ".gradle": "text",
    ".properties": "ini",
}

FILENAMES: dict[str, str] = {
    "Dockerfile": "dockerfile",
    "Makefile": "makefile",
    "Gemfile": "ruby",
    "Rakefile": "ruby",
    "CMakeLists.txt": "text",
}

CONFIG_LANGUAGES = frozenset({"json", "yaml", "toml", "ini", "dockerfile", "makefile"})
DOC_LANGUAGES = frozenset({"markdown", "text"})


def language_for(path: str) -> str | None:
    """The language of a repository path, or None when we do not index that file type."""
    p = PurePosixPath(path)
    if p.name in FILENAMES:
        return FILENAMES[p.name]
    return EXTENSIONS.get(p.suffix.lower())


# Interpreters a script without an extension names on its ``#!`` line (``bin/deploy``,
# ``.ci/run``): ``#!/bin/bash``, ``#!/usr/bin/env python3``, ``#!/usr/bin/env -S node``.
_SHEBANG = re.compile(rb"#![ \t]*(?:\S*/)?(?:env[ \t]+(?:-\S+[ \t]+)*)?([A-Za-z]+)")
INTERPRETERS: dict[str, str] = {
    "sh": "shell",
    "bash": "shell",
    "dash": "shell",
    "zsh": "shell",
    "ksh": "shell",
    "python": "python",
    "node": "javascript",
    "nodejs": "javascript",
    "deno": "typescript",
    "ruby": "ruby",
    "php": "php",
}


def needs_shebang(path: str) -> bool:
    """Whether only the file's first line can tell its language (no extension, no
    known name)."""
    p = PurePosixPath(path)
    return not p.suffix and p.name not in FILENAMES


def shebang_language(data: bytes) -> str | None:
    """The language a script's ``#!`` line names, or None (not a script, or an
    interpreter we do not index)."""
    m = _SHEBANG.match(data[:256])
    return INTERPRETERS.get(m.group(1).decode().lower()) if m else None


_TEST_PATH = re.compile(
    r"(^|/)(tests?|__tests__|spec|specs|testing)/|(^|/)test_[^/]*$|_test\.[a-z]+$|"
    r"\.(test|spec)\.[a-z]+$|(^|/)[^/]*Tests?\.(java|kt|cs|swift)$|_spec\.rb$"
)
_DOC_PATH = re.compile(r"(^|/)(docs?|documentation)/")


def kind_for(path: str, language: str) -> str:
    """source | test | docs | config, from the path and language."""
    if _TEST_PATH.search(path):
        return "test"
    if language in DOC_LANGUAGES or _DOC_PATH.search(path):
        return "docs"
    if language in CONFIG_LANGUAGES:
        return "config"
    return "source"


# Node types that are a name, in whichever grammar has them.
NAME_NODES = frozenset(
    {
        "identifier",
        "type_identifier",
        "simple_identifier",
        "field_identifier",
        "property_identifier",
        "constant",
        "name",
        "namespace_identifier",
        "scoped_identifier",
        "qualified_identifier",
        "operator_name",
        "destructor_name",
    }
)


@dataclass(frozen=True)
class NameRule:
    """A definition named by the whole text of one field, for the kinds of definition
    the grammar's ``name_fields`` do not name; where that field is absent the
    ``name_fields`` still apply."""

    field: str
    # Look for ``field`` on the first named child that has it (Go's ``type X struct``
    # keeps its name in a type_spec).
    in_child: bool = False
    # Prefix the name with the last identifier of this field (a Go method is known by its
    # receiver's type: ``func (b *Bucket) Add`` is ``Bucket.Add``).
    qualifier: str | None = None


@dataclass(frozen=True)
class Grammar:
    """Node types of one tree-sitter grammar, as chunking needs them."""

    definitions: frozenset[str]
    containers: frozenset[str] = field(default_factory=frozenset)
    wrappers: frozenset[str] = field(default_factory=frozenset)
    comments: frozenset[str] = frozenset({"comment", "line_comment", "block_comment"})
    # Nodes that precede a definition and belong to it (Rust attributes, C# attributes...).
    prefixes: frozenset[str] = field(default_factory=frozenset)
    # Definitions whose body is the next sibling (Dart's function_signature + function_body).
    sibling_body: frozenset[str] = field(default_factory=frozenset)
    # Fields that hold a definition's name, tried in order and followed down (C's
    # ``declarator`` of ``*make(void)`` is a pointer_declarator > function_declarator >
    # identifier) to a node of NAME_NODES; without one, its first child among NAME_NODES.
    name_fields: tuple[str, ...] = ("name",)
    # Definitions named otherwise, by node type.
    names: Mapping[str, NameRule] = field(default_factory=dict)
    # Children whose own name is the definition's (Dart's method_signature > function_signature).
    name_children: frozenset[str] = field(default_factory=frozenset)
    # Values that make a binding a definition (``const f = () => …``, ``X.y = class …``).
    function_values: frozenset[str] = field(default_factory=frozenset)


_JS_DEFS = {
    "function_declaration",
    "generator_function_declaration",
    "class_declaration",
    "method_definition",
    "interface_declaration",
    "type_alias_declaration",
    "enum_declaration",
    "abstract_class_declaration",
    "module",
    "internal_module",
}
_JS = Grammar(
    definitions=frozenset(_JS_DEFS),
    containers=frozenset(
        {
            "class_declaration",
            "abstract_class_declaration",
            "interface_declaration",
            "module",
            "internal_module",
        }
    ),
    wrappers=frozenset({"export_statement"}),
    prefixes=frozenset({"decorator"}),
    # `const add = …` is known by its name, `app.use = function …` by its left side.
    names={"variable_declarator": NameRule("name"), "assignment_expression": NameRule("left")},
    function_values=frozenset(
        {"function", "function_expression", "arrow_function", "generator_function", "class"}
    ),
)

GRAMMARS: dict[str, Grammar] = {
    "python": Grammar(
        definitions=frozenset({"function_definition", "class_definition"}),
        containers=frozenset({"class_definition"}),
        wrappers=frozenset({"decorated_definition"}),
    ),
    "javascript": _JS,
    "typescript": _JS,
    "tsx": _JS,
    "go": Grammar(
        definitions=frozenset({"function_declaration", "method_declaration", "type_declaration"}),
        names={
            "method_declaration": NameRule("name", qualifier="receiver"),
            "type_declaration": NameRule("name", in_child=True),
        },
    ),
    "java": Grammar(
        definitions=frozenset(
            {
                "class_declaration",
                "interface_declaration",
                "enum_declaration",
                "record_declaration",
                "annotation_type_declaration",
                "method_declaration",
                "constructor_declaration",
            }
        ),
        containers=frozenset(
            {
                "class_declaration",
                "interface_declaration",
                "enum_declaration",
                "record_declaration",
            }
        ),
    ),
    "rust": Grammar(
        definitions=frozenset(
            {
                "function_item",
                "impl_item",
                "struct_item",
                "enum_item",
                "trait_item",
                "mod_item",
                "macro_definition",
                "const_item",
                "static_item",
                "type_item",
                "union_item",
            }
        ),
        containers=frozenset({"impl_item", "trait_item", "mod_item"}),
        prefixes=frozenset({"attribute_item"}),
        names={"impl_item": NameRule("type")},  # `impl Trait for Type` is known by Type
    ),
    "ruby": Grammar(
        definitions=frozenset({"method", "singleton_method", "class", "module"}),
        containers=frozenset({"class", "module"}),
    ),
    "c": Grammar(
        definitions=frozenset(
            {"function_definition", "struct_specifier", "enum_specifier", "type_definition"}
        ),
        name_fields=("name", "declarator"),
    ),
    "cpp": Grammar(
        definitions=frozenset(
            {
                "function_definition",
                "class_specifier",
                "struct_specifier",
                "enum_specifier",
                "namespace_definition",
                "type_definition",
            }
        ),
        containers=frozenset({"class_specifier", "struct_specifier", "namespace_definition"}),
        wrappers=frozenset({"template_declaration"}),
        name_fields=("name", "declarator"),
    ),
    "csharp": Grammar(
        definitions=frozenset(
            {
                "class_declaration",
                "struct_declaration",
                "interface_declaration",
                "record_declaration",
                "enum_declaration",
                "namespace_declaration",
                "method_declaration",
                "constructor_declaration",
                "property_declaration",
            }
        ),
        containers=frozenset(
            {
                "class_declaration",
                "struct_declaration",
                "interface_declaration",
                "record_declaration",
                "namespace_declaration",
            }
        ),
    ),
    "kotlin": Grammar(
        definitions=frozenset({"class_declaration", "object_declaration", "function_declaration"}),
        containers=frozenset({"class_declaration", "object_declaration"}),
        name_fields=(),  # the grammar has no fields: a definition's first identifier
    ),
    "php": Grammar(
        definitions=frozenset(
            {
                "class_declaration",
                "interface_declaration",
                "trait_declaration",
                "enum_declaration",
                "method_declaration",
                "function_definition",
            }
        ),
        containers=frozenset({"class_declaration", "interface_declaration", "trait_declaration"}),
    ),
    "swift": Grammar(
        definitions=frozenset(
            {
                "class_declaration",
                "protocol_declaration",
                "function_declaration",
                "init_declaration",
            }
        ),
        containers=frozenset({"class_declaration", "protocol_declaration"}),
    ),
    "dart": Grammar(
        definitions=frozenset(
            {
                "class_definition",
                "enum_declaration",
                "mixin_declaration",
                "extension_declaration",
                "function_signature",
                "method_signature",
            }
        ),
        containers=frozenset({"class_definition", "mixin_declaration", "extension_declaration"}),
        sibling_body=frozenset({"function_signature", "method_signature"}),
        name_children=frozenset({"function_signature", "method_signature"}),
        comments=frozenset({"comment", "documentation_comment"}),
    ),
}

IMPORT_LINE = re.compile(
    r"^\s*(import\s|from\s+\S+\s+import\s|#include\s|using\s+[\w.]+;|use\s|require\(|"
    r"const\s+\w+\s*=\s*require\(|package\s)"
)


def as_utf8(data: bytes) -> bytes:
    """UTF-16 text with its byte order mark (as Windows tools write .ps1, .cs or .sql files)
    re-encoded as UTF-8; any other bytes as they are."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        try:
            return data.decode("utf-16").encode("utf-8")
        except UnicodeDecodeError:
            return data
    return data
