"""Property tests: whatever the world looks like, no answer draws on a repo the asker cannot read.

``CODEASK_LEAK_EXAMPLES`` sets how many random worlds each property tries (default 300).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete
from sqlmodel import Session

from acl.enforce import check_hits
from acl.github import GitHubClient
from acl.models import ChannelGrant, IdentityLink, PermissionCache
from acl.permissions import AccessResolver, Place, Principal, decide_access
from acl.store import AclStore
from bot.answer import extractive_answer
from indexer.backend import SearchBackend
from indexer.models import Chunk, RepoState, SearchRequest
from tests.fake_github import FakeGitHubServer
from tests.store_backends import BACKENDS, open_backend

EXAMPLES = int(os.environ.get("CODEASK_LEAK_EXAMPLES", "300"))
REPOS = ["acme/api", "acme/web", "acme/billing", "beta/core", "beta/docs", "gamma/infra"]
USERS = ["alice", "bob", "carol"]
ROLES = ["none", "read", "triage", "write", "maintain", "admin"]
VISIBILITIES = ["public", "internal", "private"]
WORDS = [
    "retry",
    "billing",
    "token",
    "user",
    "cache",
    "parse",
    "render",
    "config",
    "query",
    "index",
]
DIM = 16
PROPERTY = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def marker(repo: str) -> str:
    """A word that occurs only in ``repo``'s code, to catch its text anywhere it must not be."""
    return "leakmark_" + repo.replace("/", "_")


@dataclass
class World:
    visibility: dict[str, str]
    roles: dict[tuple[str, str], str]
    members: dict[str, set[str]]
    linked: set[str]
    grants: dict[str, set[str]]
    asker: str
    place: Place
    github_down: bool

    def can_read(self, login: str, repo: str) -> bool:
        """Ground truth, written independently of the resolver."""
        vis = self.visibility[repo]
        if vis == "public":
            return True
        if login not in self.linked:
            return False
        if self.roles.get((repo, login), "none") != "none":
            return True
        return vis == "internal" and login in self.members.get(repo.split("/")[0], set())


@st.composite
def worlds(draw: st.DrawFn) -> World:
    repos = draw(st.lists(st.sampled_from(REPOS), min_size=1, max_size=len(REPOS), unique=True))
    visibility = {r: draw(st.sampled_from(VISIBILITIES)) for r in repos}
    roles = {(r, u): draw(st.sampled_from(ROLES)) for r in repos for u in USERS}
    members = {
        o: set(draw(st.lists(st.sampled_from(USERS), unique=True)))
        for o in ("acme", "beta", "gamma")
    }
    linked = set(draw(st.lists(st.sampled_from(USERS), unique=True)))
    grants = {c: set(draw(st.lists(st.sampled_from(REPOS), unique=True))) for c in ("C1", "C2")}
    place = draw(
        st.sampled_from(
            [Place("dm"), Place("channel", "C1"), Place("channel", "C2"), Place("channel", "C3")]
        )
    )
    return World(
        visibility,
        roles,
        members,
        linked,
        grants,
        asker=draw(st.sampled_from(USERS)),
        place=place,
        github_down=draw(st.booleans()),
    )


@pytest.fixture(scope="module")
def github() -> Iterator[FakeGitHubServer]:
    with FakeGitHubServer() as srv:
        for user in USERS:
            srv.fake.add_user(user)
        for repo in REPOS:
            srv.fake.add_repo(repo)
        yield srv


@pytest.fixture(scope="module")
def acl_store(tmp_path_factory: pytest.TempPathFactory) -> AclStore:
    return AclStore(f"sqlite:///{tmp_path_factory.mktemp('acl') / 'acl.db'}")


@pytest.fixture(scope="module")
def resolver(github: FakeGitHubServer, acl_store: AclStore) -> AccessResolver:
    client = GitHubClient(github.url, token=github.fake.token, sleep=lambda s: None)
    return AccessResolver(acl_store, client, ttl_seconds=300)


@pytest.fixture(scope="module", params=BACKENDS)
def index(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SearchBackend]:
    """A real index on each backend: the repos share vocabulary, each has its own marker."""
    backends = open_backend(request.param, tmp_path_factory.mktemp("index"))
    store = next(backends)
    store.ensure_schema(DIM)
    rng = np.random.default_rng(7)
    for repo in REPOS:
        chunks = []
        for i, word in enumerate(WORDS[:6]):
            other = WORDS[(i + 3) % len(WORDS)]
            text = f"def {word}_{i}():\n    # {marker(repo)} {word} {other}\n    return {i}"
            chunks.append(
                Chunk(repo, f"src/{word}.py", 1, 3, text, f"{word}_{i}", "python", "source")
            )
        vectors = rng.normal(size=(len(chunks), DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        store.apply_changes(
            repo, [], chunks, vectors, RepoState(repo, "c0ffee", "private", 0, time.time())
        )
    yield store
    next(backends, None)  # drop the index and close the store


def apply_world(world: World, github: FakeGitHubServer, store: AclStore) -> None:
    fake = github.fake
    fake.roles = dict(world.roles)
    fake.org_members = {o: set(m) for o, m in world.members.items()}
    fake.fail_status = 503 if world.github_down else None
    # One transaction per world: links and grants are replaced wholesale.
    with Session(store.engine) as s:
        for table in (IdentityLink, ChannelGrant, PermissionCache):
            s.exec(delete(table))
        for user in world.linked:
            s.add(
                IdentityLink(
                    platform="slack",
                    chat_user_id=f"U_{user}",
                    github_user_id=fake.users[user],
                    github_login=user,
                    linked_at=0.0,
                )
            )
        for channel, repos in world.grants.items():
            s.add_all(ChannelGrant(platform="slack", channel_id=channel, repo=r) for r in repos)
        s.commit()


@PROPERTY
@given(
    world=worlds(),
    words=st.lists(st.sampled_from(WORDS + [marker(r) for r in REPOS]), min_size=1, max_size=4),
    seed=st.integers(0, 2**32 - 1),
)
def test_no_answer_ever_uses_a_repo_the_asker_cannot_read(
    world: World,
    words: list[str],
    seed: int,
    github: FakeGitHubServer,
    acl_store: AclStore,
    resolver: AccessResolver,
    index: SearchBackend,
) -> None:
    apply_world(world, github, acl_store)
    registered = list(world.visibility.items())
    access = resolver.allowed_repos(Principal("slack", f"U_{world.asker}"), world.place, registered)

    readable = {r for r in world.visibility if world.can_read(world.asker, r)}
    public = {r for r, v in world.visibility.items() if v == "public"}
    assert access.repos <= readable | (
        world.grants.get(world.place.id, set()) if world.place.kind == "channel" else set()
    )
    if world.place.kind == "channel":
        granted = world.grants.get(world.place.id, set()) & set(world.visibility)
        assert access.repos == public | granted  # never a non-public, non-granted repo
    elif world.github_down:
        assert access.repos == public and (not (readable - public) or access.reason)
    else:
        assert access.repos == readable
    for repo in REPOS:
        if repo not in access.repos:
            assert repo not in access.reason

    vector = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    vector /= np.linalg.norm(vector)
    question = " ".join(words)
    request = SearchRequest(question, access.repos, k=8, embedding=tuple(float(x) for x in vector))
    hits = index.search(request)
    check_hits(hits, access)
    assert {h.chunk.repo for h in hits} <= access.repos
    answer = extractive_answer(question, hits)
    shown = answer.text + "".join(s.chunk.text + s.label + s.link() for s in answer.sources)
    for repo in REPOS:
        if repo not in access.repos:
            assert marker(repo) not in shown and repo not in shown


@PROPERTY
@given(
    visibility=st.dictionaries(
        st.sampled_from(REPOS), st.sampled_from([*VISIBILITIES, "gone"]), min_size=1
    ),
    readable=st.frozensets(st.sampled_from(REPOS)),
    grants=st.frozensets(st.sampled_from([*REPOS, "other/unindexed"])),
    place=st.sampled_from([Place("dm"), Place("channel", "C"), Place("cli")]),
    linked=st.booleans(),
    degraded=st.booleans(),
)
def test_place_policy_never_widens_access(
    visibility: dict[str, str],
    readable: frozenset[str],
    grants: frozenset[str],
    place: Place,
    linked: bool,
    degraded: bool,
) -> None:
    live = {r: v for r, v in visibility.items() if v != "gone"}
    access = decide_access(place, live, readable, grants, linked=linked, degraded=degraded)
    public = {r for r, v in live.items() if v == "public"}
    assert access.repos <= set(live)
    if place.kind == "channel":
        assert access.repos == public | (grants & set(live))
        assert access.withheld == bool((public | (readable & set(live))) - access.repos)
    else:
        assert access.repos == public | (readable & set(live))
    for repo in REPOS:
        assert repo not in access.reason
