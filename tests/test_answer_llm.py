"""Generation through LiteLLM against a local OpenAI-compatible server (real HTTP)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from bot.answer.llm import DUMMY_API_KEY, LiteLLMClient, provider_arguments
from bot.settings import BotSettings
from indexer.errors import ConfigError, UpstreamUnavailable
from tests.fake_llm import FakeLLM, Reply, running_fake_llm

HELLO = [{"role": "user", "content": "hello"}]


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLM]:
    with running_fake_llm() as s:
        yield s


def client(server: FakeLLM, **overrides: object) -> LiteLLMClient:
    settings = BotSettings(
        llm_model="tiny",
        llm_api_base=server.base_url,
        llm_retries=2,
        **overrides,  # type: ignore[arg-type]
    )
    return LiteLLMClient(settings, backoff=0.01)


def test_openai_compatible_base_gets_v1_prefix_and_a_key() -> None:
    args = provider_arguments(BotSettings(llm_model="qwen", llm_api_base="http://127.0.0.1:8080/"))
    assert args == {
        "model": "openai/qwen",
        "api_base": "http://127.0.0.1:8080/v1",
        "api_key": DUMMY_API_KEY,
    }
    ollama = provider_arguments(
        BotSettings(llm_model="ollama/llama3", llm_api_base="http://h:11434")
    )
    assert ollama == {"model": "ollama/llama3", "api_base": "http://h:11434"}
    with pytest.raises(ConfigError):
        provider_arguments(BotSettings(llm_model=""))


def test_streams_tokens_to_the_callback(server: FakeLLM) -> None:
    server.script(Reply("Retries double each time [1].", piece=5))
    tokens: list[str] = []
    text = client(server).complete(HELLO, tokens.append)
    assert text == "Retries double each time [1]."
    assert len(tokens) > 1 and "".join(tokens) == text
    sent = server.requests[0]
    assert sent["stream"] is True and sent["messages"] == HELLO
    assert sent["temperature"] == 0.1 and sent["max_tokens"] == 800


def test_non_streaming_completion(server: FakeLLM) -> None:
    server.script(Reply("plain answer"))
    assert client(server, llm_max_tokens=55).complete(HELLO) == "plain answer"
    assert not server.requests[0].get("stream") and server.requests[0]["max_tokens"] == 55


def test_rate_limit_is_retried_then_succeeds(server: FakeLLM) -> None:
    server.script(Reply(status=429), Reply(status=503), Reply("finally"))
    assert client(server).complete(HELLO, lambda _: None) == "finally"
    assert len(server.requests) == 3


def test_server_errors_exhaust_retries_with_a_clear_message(server: FakeLLM) -> None:
    server.script(Reply(status=500))
    with pytest.raises(UpstreamUnavailable, match=r"failing \(HTTP 500\) after 3 attempts"):
        client(server).complete(HELLO)
    assert len(server.requests) == 3


def test_wrong_key_is_not_retried_and_says_so(server: FakeLLM) -> None:
    server.script(Reply(status=401))
    with pytest.raises(UpstreamUnavailable, match=r"rejected the API key.*CODEASK_LLM_API_KEY"):
        client(server).complete(HELLO, lambda _: None)
    assert len(server.requests) == 1


def test_slow_provider_times_out_with_a_clear_message(server: FakeLLM) -> None:
    server.script(Reply("late", delay=5))
    with pytest.raises(UpstreamUnavailable, match=r"did not answer within 0\.5 s"):
        client(server, llm_timeout=0.5).complete(HELLO, lambda _: None)


def test_a_stream_that_stalls_midway_is_a_timeout_not_a_server_error(server: FakeLLM) -> None:
    server.script(Reply("first part, then nothing for too long", piece=12, gap=3.0))
    got: list[str] = []
    with pytest.raises(UpstreamUnavailable, match=r"did not answer within 0\.5 s"):
        client(server, llm_timeout=0.5).complete(HELLO, got.append)
    assert got == ["first part, "]  # what had arrived was streamed
    assert len(server.requests) == 1  # not retried once tokens were shown


def test_a_trickling_stream_is_cut_at_the_timeout(server: FakeLLM) -> None:
    # Every piece arrives well within the read timeout, but the whole answer never ends.
    server.script(Reply("tick " * 40, piece=5, gap=0.1))
    got: list[str] = []
    with pytest.raises(UpstreamUnavailable, match=r"did not finish its answer within 1 s"):
        client(server, llm_timeout=1.0).complete(HELLO, got.append)
    assert 0 < len(got) < 40


def test_provider_down_says_it_cannot_be_reached() -> None:
    with socket.socket() as s:  # a port that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = BotSettings(llm_model="tiny", llm_api_base=f"http://127.0.0.1:{port}", llm_retries=1)
    with pytest.raises(
        UpstreamUnavailable, match=r"Cannot reach the language model provider.*tried 2 times"
    ):
        LiteLLMClient(settings, backoff=0.01).complete(HELLO)
