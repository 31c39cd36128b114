"""Property tests: whatever the world looks like, nothing from a repo the asker cannot read
reaches the language model, a rendered answer or a "Show sources" reply.

The first property drives what production runs: the real ``Asker`` (access resolution
against a local GitHub server, the answer pipeline over a real store, the audit and the
answer record), the Slack and Teams renderers, and the Slack "Show sources" handler
clicked by a random user in a random place. The language model is a recorder that writes
back everything it was given, the worst a prompt-injected model could do. Repository
visibility comes from the access database's overrides (what GitHub webhooks set), so one
index per store serves every world.

``CODEASK_LEAK_EXAMPLES`` sets how many random worlds each property tries (default 300).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete
from sqlmodel import Session

from acl import AclSettings, AclStore, GitHubClient
from acl.models import ChannelGrant, IdentityLink, PermissionCache, RepoOverride
from acl.permissions import AccessResolver, Place, Principal, decide_access
from bot.answer import AnswerPipeline, Asker, Question
from bot.services import Services
from bot.settings import BotSettings
from bot.slack.app import NOT_HERE_TEXT, SlackBot
from bot.slack.render import answer_messages
from bot.teams.render import answer_card
from indexer.errors import UpstreamUnavailable
from indexer.models import Chunk, RepoState
from indexer.search import Searcher
from indexer.settings import IndexerSettings
from indexer.stores import SearchBackend
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
TEAM = "T1"
WEB = "https://github.example"
PLACES = [Place("dm"), Place("channel", "C1"), Place("channel", "C2"), Place("channel", "C3")]
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
    visibility: dict[str, str]  # the indexed repositories that still exist on GitHub
    roles: dict[tuple[str, str], str]
    members: dict[str, set[str]]
    linked: set[str]
    grants: dict[str, set[str]]
    asker: str
    place: Place
    github_down: bool
    model: str = "echo"  # "echo": repeats its prompt; "down": fails; "none": extractive

    def can_read(self, login: str, repo: str) -> bool:
        """Ground truth, written independently of the resolver."""
        vis = self.visibility[repo]
        if vis == "public":
            return True
        if login not in self.linked or self.github_down:
            return False
        if self.roles.get((repo, login), "none") != "none":
            return True
        return vis == "internal" and login in self.members.get(repo.split("/")[0], set())

    def may_see(self, login: str, place: Place) -> set[str]:
        """Every repository an answer to ``login`` shown in ``place`` may draw on."""
        if place.kind == "channel":
            public = {r for r, v in self.visibility.items() if v == "public"}
            return public | (self.grants.get(place.id, set()) & set(self.visibility))
        return {r for r in self.visibility if self.can_read(login, r)}


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
    return World(
        visibility,
        roles,
        members,
        linked,
        grants,
        asker=draw(st.sampled_from(USERS)),
        place=draw(st.sampled_from(PLACES)),
        github_down=draw(st.booleans()),
        model=draw(st.sampled_from(["echo", "echo", "down", "none"])),
    )


@dataclass
class RecordingModel:
    """A language model that obeys any instruction: it writes back all it was given."""

    prompts: list[str] = field(default_factory=list)
    failing: bool = False

    @property
    def name(self) -> str:
        return "recorder"

    def complete(self, messages: Sequence[Any], on_token: Any = None) -> str:
        prompt = "\n".join(str(m["content"]) for m in messages)
        self.prompts.append(prompt)
        if self.failing:
            raise UpstreamUnavailable("The language model is down (test).")
        return f"Here is everything I saw [1]:\n{prompt}"


class WordsEmbedder:
    """Bag of hashed words: the property is about access, not ranking, and 10,000 questions
    through a neural model would take longer than the rest of the suite."""

    name = "leak-words"
    dimension = 64

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.split():
                out[row, zlib.crc32(word.encode()) % self.dimension] += 1.0
            out[row, 0] += 1e-3  # never the zero vector
        return out / np.linalg.norm(out, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def github() -> Iterator[FakeGitHubServer]:
    with FakeGitHubServer() as srv:
        for user in USERS:
            srv.fake.add_user(user)
        for repo in REPOS:
            srv.fake.add_repo(repo)
        yield srv


@pytest.fixture(scope="module", params=BACKENDS)
def index(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SearchBackend]:
    """A real index on each backend: the repos share vocabulary, each has its own marker."""
    backends = open_backend(request.param, tmp_path_factory.mktemp("index"))
    store = next(backends)
    embedder = WordsEmbedder()
    store.ensure_schema(embedder.dimension)
    for repo in REPOS:
        chunks = []
        for i, word in enumerate(WORDS[:6]):
            other = WORDS[(i + 3) % len(WORDS)]
            text = f"def {word}_{i}():\n    # {marker(repo)} {word} {other}\n    return {i}"
            chunks.append(
                Chunk(
                    repo,
                    f"src/{word}.py",
                    1,
                    3,
                    text,
                    f"{word}_{i}",
                    "python",
                    "source",
                    visibility="public",
                    commit="c0ffee",
                )
            )
        vectors = np.asarray(embedder.embed([c.text for c in chunks]), dtype=np.float32)
        store.apply_changes(repo, [], chunks, vectors, RepoState(repo, "c0ffee", "public", 0, 0.0))
    yield store
    next(backends, None)  # drop the index and close the store


@dataclass
class Bot:
    asker: Asker
    slack: SlackBot
    model: RecordingModel
    extractive: Asker
    store: AclStore


@pytest.fixture(scope="module")
def bot(
    index: SearchBackend,
    github: FakeGitHubServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Bot]:
    """The production objects, wired as ``codeask serve`` wires them, over ``index``."""
    # The metadata database takes several commits per world: keep it in memory-backed
    # storage where the machine has it.
    shm = Path("/dev/shm")
    tmp = Path(tempfile.mkdtemp(dir=shm)) if shm.is_dir() else tmp_path_factory.mktemp("leak")
    embedder = WordsEmbedder()
    bot_settings = BotSettings(
        slack_bot_token="xoxb-leak", slack_signing_secret="s", not_found_threshold=-1.0
    )
    services = Services(
        bot=bot_settings,
        acl=AclSettings(github_api_url=github.url, github_token=github.fake.token),
        indexer=IndexerSettings(data_dir=tmp / "data", database_url=f"sqlite:///{tmp / 'meta.db'}"),
    )
    services.__dict__["store"] = index  # the store under test instead of one from settings
    client = GitHubClient(github.url, token=github.fake.token, sleep=lambda s: None)
    resolver = AccessResolver(services.acl_store, client, ttl_seconds=300)
    searcher = Searcher(index, embedder)
    model = RecordingModel()
    asker = Asker(services, AnswerPipeline(searcher, bot_settings, llm=model), resolver)
    no_model = AnswerPipeline(searcher, BotSettings(llm_model="", not_found_threshold=-1.0))
    extractive = Asker(services, no_model, resolver)
    yield Bot(asker, SlackBot(services, asker), model, extractive, services.acl_store)
    client.close()
    services.__dict__.pop("store")
    services.close()
    shutil.rmtree(tmp, ignore_errors=True)


def apply_world(world: World, github: FakeGitHubServer, store: AclStore) -> None:
    fake = github.fake
    fake.roles = dict(world.roles)
    fake.org_members = {o: set(m) for o, m in world.members.items()}
    fake.fail_status = 503 if world.github_down else None
    # One transaction per world: links, grants and visibilities are replaced wholesale.
    with Session(store.engine) as s:
        for table in (IdentityLink, ChannelGrant, PermissionCache, RepoOverride):
            s.exec(delete(table))  # type: ignore[call-overload]
        for user in world.linked:
            s.add(
                IdentityLink(
                    platform="slack",
                    chat_user_id=f"{TEAM}:U_{user}",
                    github_user_id=fake.users[user],
                    github_login=user,
                    linked_at=0.0,
                )
            )
        for channel, repos in world.grants.items():
            s.add_all(ChannelGrant(platform="slack", channel_id=channel, repo=r) for r in repos)
        for repo in REPOS:
            vis = world.visibility.get(repo, "gone")
            s.add(RepoOverride(repo=repo, visibility=vis, updated_at=0.0))
        s.commit()


def _forbidden(text: str, allowed: set[str]) -> list[str]:
    """Names and code markers in ``text`` of repositories outside ``allowed``."""
    return [r for r in REPOS if r not in allowed and (marker(r) in text or r in text)]


def click_sources(bot: Bot, question_id: str, clicker: str, place: Place) -> str:
    """Everything the Slack "Show sources" handler sends to ``clicker`` clicking in ``place``."""
    channel = f"D_{clicker}" if place.kind == "dm" else place.id
    body = {
        "user": {"id": f"U_{clicker}", "team_id": TEAM},
        "team": {"id": TEAM},
        "channel": {"id": channel},
        "container": {"channel_id": channel},
    }
    sent: list[str] = []

    async def ack() -> None:
        return None

    async def ephemeral(_: dict[str, Any], text: str, blocks: Any = None) -> None:
        sent.append(text if blocks is None else f"{text}\n{blocks!r}")

    bot.slack._ephemeral = ephemeral  # type: ignore[method-assign]
    asyncio.run(bot.slack._on_sources(ack, body, {"value": question_id}))
    return "\n".join(sent)


@PROPERTY
@given(
    world=worlds(),
    words=st.lists(st.sampled_from(WORDS + [marker(r) for r in REPOS]), min_size=1, max_size=4),
    clicker=st.sampled_from(USERS),
    click_place=st.sampled_from(PLACES),
)
def test_nothing_the_asker_cannot_read_reaches_the_model_a_reply_or_a_click(
    world: World,
    words: list[str],
    clicker: str,
    click_place: Place,
    github: FakeGitHubServer,
    bot: Bot,
) -> None:
    apply_world(world, github, bot.store)
    allowed = world.may_see(world.asker, world.place)
    asker = bot.extractive if world.model == "none" else bot.asker
    bot.model.failing = world.model == "down"
    bot.model.prompts.clear()
    question = Question(Principal("slack", f"{TEAM}:U_{world.asker}"), world.place, " ".join(words))
    answer = asker.answer(question)

    assert {s.chunk.repo for s in answer.sources} <= allowed
    for prompt in bot.model.prompts:
        assert not _forbidden(prompt.replace(question.text, ""), allowed), prompt
    slack = "".join(f"{m.text}{m.blocks!r}" for m in answer_messages(answer, question.id, WEB))
    teams = repr(answer_card(answer, question.id, web_base=WEB))
    for rendered in (slack, teams, answer.text, " ".join(answer.notes), answer.asker_note):
        assert not _forbidden(rendered.replace(question.text, ""), allowed)

    shown = click_sources(bot, question.id, clicker, click_place)
    same_place = (
        clicker == world.asker and click_place.kind == "dm"
        if world.place.kind == "dm"
        else click_place == world.place
    )
    readable_here = world.may_see(clicker, click_place)
    assert not _forbidden(shown, readable_here & allowed)
    cited = {s.chunk.repo for s in answer.sources}
    if same_place and cited <= readable_here:
        assert NOT_HERE_TEXT not in shown  # shown when allowed: the check is not just "never"
    else:
        assert shown.strip() == NOT_HERE_TEXT


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
