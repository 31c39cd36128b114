"""Definitions, references and literals from each grammar's tag queries (indexer/source/queries)."""

from __future__ import annotations

import pytest

from indexer.source.tags import MAX_TAGS, literals, tags

# language -> (source, expected definitions as (qualified, kind), references that must be found)
CASES: dict[str, tuple[str, set[tuple[str, str]], set[str]]] = {
    "python": (
        "import os\nfrom retry import Backoff\n\nMAX_RETRIES = 3\n\n\n"
        "class Session(BaseSession):\n"
        "    def send(self, request: Request) -> Response:\n"
        "        delay = Backoff.next_delay(request)\n"
        "        return self.adapter.send(request, timeout=delay)\n\n\n"
        "def build_session():\n    return Session()\n",
        {
            ("MAX_RETRIES", "constant"),
            ("Session", "class"),
            ("Session.send", "method"),
            ("build_session", "function"),
        },
        {"os", "Backoff", "BaseSession", "Request", "Response", "next_delay", "send", "Session"},
    ),
    "javascript": (
        "import { compose } from 'koa-compose';\nconst MAX_BODY = 1024;\n\n"
        "class Application extends Emitter {\n  listen(port) {\n"
        "    const server = http.createServer(this.callback());\n    return server.listen(port);\n  }\n}\n\n"
        "function respond(ctx) {\n  return new Response(ctx.body);\n}\n",
        {
            ("MAX_BODY", "constant"),
            ("Application", "class"),
            ("Application.listen", "method"),
            ("respond", "function"),
        },
        {"compose", "koa-compose", "Emitter", "createServer", "callback", "Response"},
    ),
    "typescript": (
        "import { observable } from './observable';\n\nexport interface Lifecycle {\n  dispose(): void;\n}\n\n"
        "export type Listener = (value: number) => void;\n\n"
        "export class Reaction implements Lifecycle {\n  track(fn: Listener): Derivation {\n"
        "    return startBatch(fn);\n  }\n  dispose(): void {}\n}\n\n"
        "export function autorun(view: Listener): Reaction {\n  return new Reaction();\n}\n",
        {
            ("Lifecycle", "class"),
            ("Lifecycle.dispose", "method"),
            ("Listener", "class"),
            ("Reaction", "class"),
            ("Reaction.track", "method"),
            ("Reaction.dispose", "method"),
            ("autorun", "function"),
        },
        {"observable", "./observable", "Lifecycle", "Listener", "Derivation", "startBatch"},
    ),
    "go": (
        'package uuid\n\nimport "crypto/rand"\n\nconst Size = 16\n\ntype UUID [Size]byte\n\n'
        "func (u UUID) String() string {\n\treturn encodeHex(u[:])\n}\n\n"
        "func NewRandom() (UUID, error) {\n\tvar u UUID\n\t_, err := rand.Read(u[:])\n\treturn u, err\n}\n",
        {
            ("Size", "constant"),
            ("UUID", "class"),
            ("UUID.String", "method"),
            ("NewRandom", "function"),
        },
        {"crypto/rand", "encodeHex", "Read", "UUID"},
    ),
    "rust": (
        "use std::fmt;\n\npub const MAX_LEN: usize = 64;\n\npub struct Version {\n    pub major: u64,\n}\n\n"
        "impl Version {\n    pub fn parse(text: &str) -> Result<Version, Error> {\n"
        "        let major = parse_number(text)?;\n        Ok(Version { major })\n    }\n}\n\n"
        "pub trait Compare {\n    fn cmp(&self) -> bool;\n}\n",
        {
            ("MAX_LEN", "constant"),
            ("Version", "class"),
            ("Version.parse", "method"),
            ("Compare", "class"),
            ("Compare.cmp", "method"),
        },
        {"parse_number", "Result", "Error", "Version"},
    ),
    "java": (
        "package com.google.gson;\n\nimport java.util.List;\n\n"
        "public final class Gson extends Base implements Codec {\n"
        "  static final int MAX_DEPTH = 255;\n\n  public String toJson(Object src) {\n"
        "    JsonWriter writer = newJsonWriter(src);\n    return writer.toString();\n  }\n}\n\n"
        "interface Codec {}\n",
        {
            ("Gson", "class"),
            ("Gson.MAX_DEPTH", "field"),
            ("Gson.toJson", "method"),
            ("Codec", "class"),
        },
        {"java.util.List", "Base", "Codec", "JsonWriter", "newJsonWriter", "toString"},
    ),
    "c": (
        "#include <stdlib.h>\n#define MAX_WBITS 15\n\ntypedef struct z_stream_s {\n  int avail_in;\n} z_stream;\n\n"
        "int inflate_reset(z_stream *strm) {\n  return inflate_reset_keep(strm);\n}\n",
        {
            ("MAX_WBITS", "constant"),
            ("z_stream_s", "class"),
            ("z_stream", "type"),
            ("inflate_reset", "function"),
        },
        {"stdlib.h", "inflate_reset_keep", "z_stream"},
    ),
    "cpp": (
        "#include <vector>\n\nnamespace marisa {\n\nclass Trie : public Base {\n public:\n"
        "  void build(Keyset &keyset) {\n    builder_.build(keyset);\n  }\n};\n\n}  // namespace marisa\n\n"
        "void Trie::clear() {\n  std::swap(a, b);\n}\n",
        {
            ("marisa.Trie", "class"),
            ("marisa.Trie.build", "method"),
            ("Trie.clear", "method"),
        },
        {"vector", "Base", "Keyset", "swap"},
    ),
    "csharp": (
        "using System.Text;\n\nnamespace Python.Runtime {\n  public class Converter : Base {\n"
        "    const int MaxDepth = 8;\n    public static object ToManaged(IntPtr value) {\n"
        "      return Decode(value, new StringBuilder());\n    }\n  }\n}\n",
        {
            ("Python.Runtime.Converter", "class"),
            ("Python.Runtime.Converter.MaxDepth", "field"),
            ("Python.Runtime.Converter.ToManaged", "method"),
        },
        {"Base", "Decode", "StringBuilder", "IntPtr"},
    ),
    "ruby": (
        "require 'set'\n\nmodule Dry\n  class Inflector < Base\n    DEFAULT_SEPARATOR = ' '\n\n"
        "    def pluralize(input)\n      rules.apply_to(input)\n    end\n  end\nend\n",
        {
            ("Dry", "class"),
            ("Dry.Inflector", "class"),
            ("Dry.Inflector.DEFAULT_SEPARATOR", "constant"),
            ("Dry.Inflector.pluralize", "method"),
        },
        {"require", "Base", "apply_to"},
    ),
    "php": (
        "<?php\nnamespace Composer\\Semver;\n\nuse Composer\\Semver\\Constraint\\Constraint;\n\n"
        "class Comparator extends Base {\n    public static function greaterThan($a, $b) {\n"
        "        return self::compare($a, '>', $b) && helper($a) && new Constraint('>', $b);\n    }\n}\n",
        {("Comparator", "class"), ("Comparator.greaterThan", "method")},
        {"Composer\\Semver\\Constraint\\Constraint", "Base", "compare", "helper", "Constraint"},
    ),
    "kotlin": (
        "package expo.modules\n\nimport android.os.Bundle\n\nconst val MAX_DEPTH = 4\n\n"
        "class ModuleRegistry : Base() {\n  fun register(module: Module) {\n"
        "    validate(module)\n    modules.add(module)\n  }\n}\n",
        {
            ("MAX_DEPTH", "constant"),
            ("ModuleRegistry", "class"),
            ("ModuleRegistry.register", "method"),
        },
        {"android.os.Bundle", "Base", "Module", "validate", "add"},
    ),
    "swift": (
        "import Foundation\n\nlet defaultTimeout = 30\n\npublic protocol AnyModule {}\n\n"
        "public final class ModuleHolder: Base {\n  func call(_ method: String) -> Any {\n"
        "    return dispatch(method)\n  }\n}\n",
        {
            ("defaultTimeout", "constant"),
            ("AnyModule", "class"),
            ("ModuleHolder", "class"),
            ("ModuleHolder.call", "method"),
        },
        {"Foundation", "Base", "String", "dispatch"},
    ),
    "dart": (
        "import 'dart:async';\n\nconst maxRetries = 3;\n\nclass Client extends Base {\n"
        "  Future<void> send(Request r) {\n    return transport(r);\n  }\n}\n\n"
        "void main() {\n  run(Client());\n}\n",
        {
            ("maxRetries", "constant"),
            ("Client", "class"),
            ("Client.send", "method"),
            ("main", "function"),
        },
        {"dart:async", "Base", "Request", "transport", "run"},
    ),
}
CASES["tsx"] = CASES["typescript"]


@pytest.mark.parametrize("language", sorted(CASES))
def test_definitions_and_references(language: str) -> None:
    source, definitions, references = CASES[language]
    found = tags(language, source.encode())
    defined = {(t.qualified, t.kind) for t in found if t.role == "definition"}
    assert definitions <= defined, sorted(defined)
    used = {t.name for t in found if t.role == "reference"}
    assert references <= used, sorted(used)
    assert all(t.line >= 1 for t in found)


def test_lines_are_where_the_definition_starts() -> None:
    found = tags("python", CASES["python"][0].encode())
    lines = {t.qualified: t.line for t in found if t.role == "definition"}
    assert lines["Session"] == 7 and lines["Session.send"] == 8 and lines["build_session"] == 13


def test_literals_keep_messages_keys_constants_and_dotted_names() -> None:
    code = (
        b"import os\n\ndef resolve(url):\n"
        b"    bundle = os.environ.get('REQUESTS_CA_BUNDLE')\n"
        b"    if not url.startswith('http'):\n"
        b'        raise InvalidURL("Perhaps you meant https://")\n'
        b"    return DEFAULT_CA_BUNDLE_PATH\n"
    )
    found = literals("python", code)
    for expected in (
        "REQUESTS_CA_BUNDLE",
        "Perhaps you meant https://",
        "os.environ",
        "DEFAULT_CA_BUNDLE_PATH",
        "http",
    ):
        assert expected in found, found


def test_bad_and_huge_input_never_raise_and_stay_bounded() -> None:
    assert tags("cobol", b"MOVE A TO B") == [] and literals("cobol", b"x") == []
    assert tags("python", b"") == []
    broken = b"\xff\xfe def load_config(): pass\n"
    assert [t.name for t in tags("python", broken)] == ["load_config"]
    deep = b"x = " + b"[" * 50_000 + b"]" * 50_000
    assert len(tags("python", deep)) <= MAX_TAGS
    many = b"".join(b"f%d(x)\n" % i for i in range(20_000))
    assert len(tags("python", many)) <= MAX_TAGS


# language -> (source, definitions (qualified, kind) and references that must be among them)
GAPS: dict[str, tuple[str, set[tuple[str, str]], set[str]]] = {
    "go": (
        "package store\n\ntype Store interface {\n\tGet(key string) (string, error)\n}\n",
        {("Store", "class"), ("Store.Get", "method")},
        set(),
    ),
    "rust": (
        "use serde::{Deserialize, de::Visitor};\nuse std::fmt;\n",
        set(),
        {"serde", "Deserialize", "Visitor", "std::fmt", "fmt"},
    ),
    "ruby": (
        'require "net/http"\nrequire_relative "lib/retry"\n\nclient = Client.new(timeout: 5)\n',
        set(),
        {"net/http", "lib/retry", "Client"},
    ),
    "swift": (
        "extension Kettle {\n  func boil() {}\n}\n\nclass Teapot {\n  init(size: Int) {}\n}\n",
        {("Kettle.boil", "method"), ("Teapot", "class"), ("Teapot.init", "method")},
        set(),
    ),
    "dart": (
        "class Account {\n  Account(this.id);\n  Account.guest() : id = 0;\n"
        "  int get balance => 0;\n  set balance(int v) {}\n}\n",
        {("Account.Account", "method"), ("Account.guest", "method"), ("Account.balance", "method")},
        set(),
    ),
    "tsx": (
        "export function Toolbar() {\n  return <Panel><Icon.Star size={2} /></Panel>;\n}\n",
        {("Toolbar", "function")},
        {"Panel", "Icon.Star"},
    ),
}


@pytest.mark.parametrize("language", sorted(GAPS))
def test_the_names_each_grammar_used_to_miss(language: str) -> None:
    source, defined, referenced = GAPS[language]
    found = tags(language, source.encode())
    definitions = {(t.qualified, t.kind) for t in found if t.role == "definition"}
    assert defined <= definitions, definitions
    assert referenced <= {t.name for t in found if t.role == "reference"}
    if language == "swift":  # an extension qualifies its methods but does not define the type
        assert ("Kettle", "class") not in definitions
