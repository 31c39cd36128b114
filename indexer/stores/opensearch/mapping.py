"""The OpenSearch index bodies (chunks and repo state) and the check of an existing mapping.

The chunk index lives behind an alias (``codeask-chunks`` → ``codeask-chunks-v1``) so that a
mapping change is a new index, a reindex and an atomic alias swap (``opensearch_migrate``).
"""

from __future__ import annotations

from typing import Any

# Bump when the analysis chain or the mapping changes in a way old indices do not have;
# ``check_mapping`` then refuses the old index and the migration path takes over.
SCHEMA_VERSION = 4
# Fields a later version only adds: an index of an earlier version gets them in place
# when every version since only added fields (``in_place_upgrade``), as its documents
# read right without them. 3: ``retired``;
# 4: the names index (its documents get names when their repository is next indexed:
# the names version is part of each repository's config version).
_ADDED_IN = {3: ("retired",), 4: ("defines", "references", "literals")}

# Splits identifiers at case changes, acronym runs, underscores and digits, keeping the
# whole token: ``parseHTTPRequest`` → parsehttprequest, parse, http, request. This is what
# ``indexer.source.tokens.code_tokens`` does for the embedded store, so BM25 sees the same terms.
# Not ``word_delimiter_graph``: it never splits inside an acronym run (``HTTPRequest`` stays
# whole) and emits parts at several positions, which inflates term frequencies; dots,
# slashes and dashes are already separators of the ``code_ident`` tokenizer.
_CASE_SPLIT = r"(\p{Lu}?\p{Ll}+|\p{Lu}+(?=\p{Lu}\p{Ll})|\p{Lu}+|\p{N}+)"

ANALYSIS: dict[str, Any] = {
    "tokenizer": {
        # Identifier characters stay together (``get_user_id``), everything else separates.
        "code_ident": {"type": "pattern", "pattern": r"[^\p{L}\p{N}_]+"},
        "code_path": {"type": "path_hierarchy", "delimiter": "/"},
    },
    "filter": {
        "code_case_split": {
            "type": "pattern_capture",
            "preserve_original": True,
            "patterns": [_CASE_SPLIT],
        },
        "code_unique": {"type": "unique", "only_on_same_position": True},
    },
    "analyzer": {
        "code": {
            "type": "custom",
            "tokenizer": "code_ident",
            "filter": ["code_case_split", "lowercase", "porter_stem", "code_unique"],
        },
        "code_path": {"type": "custom", "tokenizer": "code_path", "filter": ["lowercase"]},
    },
}

CONCURRENT_SEARCH_SETTING = "index.search.concurrent_segment_search.mode"

_CODE_TEXT = {"type": "text", "analyzer": "code"}
_KEYWORD = {"type": "keyword"}


def vector_method(encoding: str = "float") -> dict[str, Any]:
    """HNSW on Lucene, cosine; ``sq`` adds Lucene's scalar quantizer (int7 per segment)."""
    parameters: dict[str, Any] = {"m": 16, "ef_construction": 100}
    if encoding == "sq":
        # The graph is built and searched on 1-byte vectors (the float vectors are kept for
        # rescoring and merges): 1M chunks loaded at 359/s against ~190/s for float vectors
        # at 300k (docs/benchmarks.md).
        parameters["encoder"] = {"name": "sq"}
    return {
        "name": "hnsw",
        "engine": "lucene",
        "space_type": "cosinesimil",
        "parameters": parameters,
    }


def chunk_properties(dimension: int, encoding: str = "float") -> dict[str, Any]:
    return {
        "repo": _KEYWORD,
        "visibility": _KEYWORD,
        "language": _KEYWORD,
        "kind": _KEYWORD,
        "commit": _KEYWORD,
        "blob_sha": _KEYWORD,
        # The run (generation) that stored the document: hidden from searches while that
        # run is pending in the repository state (opensearch_store, "Consistency").
        "run": _KEYWORD,
        # The run that replaced the document: hidden once that run has committed, until
        # then still searchable. Missing on every live document.
        "retired": _KEYWORD,
        "path": {
            "type": "keyword",
            "fields": {
                "words": _CODE_TEXT,
                # ``{"term": {"path.tree": "src/http"}}`` matches everything under src/http/.
                "tree": {"type": "text", "analyzer": "code_path", "search_analyzer": "keyword"},
            },
        },
        "symbol": {**_CODE_TEXT, "fields": {"raw": _KEYWORD}},
        # The names index (indexer.source.names): lower-cased keys, matched exactly.
        "defines": _KEYWORD,
        "references": _KEYWORD,
        "literals": _KEYWORD,
        "header": _CODE_TEXT,
        "text": _CODE_TEXT,
        "start_line": {"type": "integer"},
        "end_line": {"type": "integer"},
        "embedding": {
            "type": "knn_vector",
            "dimension": dimension,
            # Always name the engine: the node's default (faiss) needs native libraries.
            "method": vector_method(encoding),
        },
    }


def chunk_index_body(
    dimension: int,
    shards: int,
    replicas: int,
    alias: str,
    routing: bool = False,
    encoding: str = "float",
) -> dict[str, Any]:
    """Settings, mapping and alias of a new chunk index for vectors of ``dimension``.

    With ``routing`` every chunk is stored with its repository as the routing value
    (required, so a write or delete that forgets it fails instead of using the wrong shard).
    """
    mappings: dict[str, Any] = {
        "dynamic": "strict",
        "_meta": {"codeask_schema": SCHEMA_VERSION},
        "properties": chunk_properties(dimension, encoding),
    }
    if routing:
        mappings["_routing"] = {"required": True}
    return {
        "settings": {
            "index.knn": True,
            "number_of_shards": shards,
            "number_of_replicas": replicas,
            "analysis": ANALYSIS,
        },
        "mappings": mappings,
        "aliases": {alias: {}},
    }


def state_index_body(replicas: int) -> dict[str, Any]:
    """One small document per repository: what was indexed, and writes still in flight."""
    return {
        "settings": {"number_of_shards": 1, "number_of_replicas": replicas},
        "mappings": {
            "dynamic": "strict",
            "properties": {
                "repo": _KEYWORD,
                "commit": _KEYWORD,
                "visibility": _KEYWORD,
                "chunk_count": {"type": "long"},
                "indexed_at": {"type": "double"},
                "config_version": _KEYWORD,
                # Run ids of writes that started and did not finish (see OpenSearchStore).
                "pending": _KEYWORD,
            },
        },
    }


def _walk(expected: dict[str, Any], actual: dict[str, Any], prefix: str) -> list[str]:
    problems: list[str] = []
    for name, spec in expected.items():
        field = f"{prefix}{name}"
        have = actual.get(name)
        if have is None:
            problems.append(f"field {field!r} is missing")
            continue
        for key in ("type", "analyzer", "search_analyzer"):
            if spec.get(key, "text" if key == "type" else None) != have.get(
                key, "text" if key == "type" else None
            ):
                problems.append(
                    f"field {field!r} has {key} {have.get(key)!r}, not {spec.get(key)!r}"
                )
        problems += _walk(spec.get("fields", {}), have.get("fields", {}), f"{field}.")
    return problems


def check_mapping(
    mapping: dict[str, Any], dimension: int, routing: bool = False, encoding: str = "float"
) -> list[str]:
    """What makes an existing chunk index mapping unusable for ``dimension`` (empty: fine)."""
    expected = chunk_properties(dimension, encoding)
    actual = mapping.get("properties", {})
    version = mapping.get("_meta", {}).get("codeask_schema")
    problems: list[str] = []
    if version != SCHEMA_VERSION:
        problems.append(f"schema version is {version!r}, this codeask writes {SCHEMA_VERSION}")
    routed = bool(mapping.get("_routing", {}).get("required", False))
    if routed != routing:
        problems.append(
            f"its chunks are {'' if routed else 'not '}routed by repository but "
            f"CODEASK_OPENSEARCH_ROUTING is {'on' if routing else 'off'}"
        )
    vector = actual.get("embedding", {})
    if vector.get("type") == "knn_vector":
        if int(vector.get("dimension", -1)) != dimension:
            problems.append(
                f"it holds {vector.get('dimension')}-dimensional vectors but the embedding "
                f"model gives {dimension}"
            )
        method = vector.get("method", {})
        for key in ("engine", "space_type", "name"):
            if method.get(key) != expected["embedding"]["method"][key]:
                problems.append(
                    f"the vector field uses {key} {method.get(key)!r}, "
                    f"not {expected['embedding']['method'][key]!r}"
                )
        have = (
            "sq" if method.get("parameters", {}).get("encoder", {}).get("name") == "sq" else "float"
        )
        if have != encoding:
            problems.append(
                f"its vectors are stored as {have} but CODEASK_OPENSEARCH_VECTOR_ENCODING "
                f"is {encoding}"
            )
        expected = {k: v for k, v in expected.items() if k != "embedding"}
    return problems + _walk(expected, actual, "")


def in_place_upgrade(
    mapping: dict[str, Any], dimension: int, routing: bool = False, encoding: str = "float"
) -> dict[str, Any] | None:
    """The ``put_mapping`` body that brings an index of the previous schema version up to
    this one by adding fields, or None when that is not enough (or nothing is needed)."""
    version = mapping.get("_meta", {}).get("codeask_schema")
    if not isinstance(version, int) or version >= SCHEMA_VERSION:
        return None
    steps = range(version + 1, SCHEMA_VERSION + 1)
    if any(step not in _ADDED_IN for step in steps):
        return None  # some version between changed more than it added
    properties = chunk_properties(dimension, encoding)
    new = {name: properties[name] for step in steps for name in _ADDED_IN[step]}
    upgraded = {
        **mapping,
        "_meta": {**mapping.get("_meta", {}), "codeask_schema": SCHEMA_VERSION},
        "properties": {**mapping.get("properties", {}), **new},
    }
    if check_mapping(upgraded, dimension, routing, encoding):
        return None
    return {"_meta": upgraded["_meta"], "properties": new}
