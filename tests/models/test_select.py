"""Choosing the brain from a spec or the environment."""

from __future__ import annotations

import sys
import types

import pytest

from loopnb.engine.models import AnthropicModel, ModelConfigError, OpenAIChatModel, from_env, model_from_spec
from loopnb.engine.models._select import LOCAL_SERVERS


class StubFallible:
    name = "fallible"


@pytest.fixture
def stub_fallible(monkeypatch: pytest.MonkeyPatch) -> type[StubFallible]:
    """Stands in for the embedded FallibleModel so these tests do not depend on it."""
    module = types.ModuleType("loopnb.engine.models._fallible")
    module.FallibleModel = StubFallible  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "loopnb.engine.models._fallible", module)
    return StubFallible


def test_nothing_configured_means_the_embedded_default(stub_fallible: type) -> None:
    assert isinstance(from_env(), stub_fallible)


def test_a_key_alone_never_switches_to_a_real_model(
    stub_fallible: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-x")
    assert isinstance(from_env(), stub_fallible)


def test_loopnb_model_picks_a_real_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPNB_MODEL", "openai:gpt-4o-mini")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    model = from_env()
    assert isinstance(model, OpenAIChatModel)
    assert model.name == "openai:gpt-4o-mini"
    assert model.base_url is None


def test_loopnb_base_url_points_the_spec_at_a_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPNB_MODEL", "anthropic:claude-test")
    monkeypatch.setenv("LOOPNB_BASE_URL", "http://127.0.0.1:9999")
    model = from_env()
    assert isinstance(model, AnthropicModel)
    assert model.base_url == "http://127.0.0.1:9999"
    assert model.name == "anthropic:claude-test@127.0.0.1:9999"


def test_the_cli_arguments_win_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPNB_MODEL", "anthropic:claude-test")
    model = from_env("openai:gpt-test", base_url="http://127.0.0.1:8000/v1", timeout=5.0)
    assert isinstance(model, OpenAIChatModel)
    assert (model.model, model.base_url, model.timeout) == (
        "gpt-test",
        "http://127.0.0.1:8000/v1",
        5.0,
    )


def test_a_base_url_without_a_model_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPNB_BASE_URL", "http://127.0.0.1:8000/v1")
    with pytest.raises(ModelConfigError, match="LOOPNB_MODEL"):
        from_env()


@pytest.mark.parametrize(
    ("spec", "cls", "model"),
    [
        ("openai:gpt-4o", OpenAIChatModel, "gpt-4o"),
        ("openai", OpenAIChatModel, "gpt-4o-mini"),
        ("OpenAI:gpt-4o", OpenAIChatModel, "gpt-4o"),
        ("anthropic:claude-opus-4-1", AnthropicModel, "claude-opus-4-1"),
        ("anthropic", AnthropicModel, "claude-haiku-4-5"),
        ("openai:org/model:tag", OpenAIChatModel, "org/model:tag"),
    ],
)
def test_specs(spec: str, cls: type, model: str) -> None:
    built = model_from_spec(spec, api_key="k")
    assert isinstance(built, cls)
    assert built.model == model  # type: ignore[attr-defined]


@pytest.mark.parametrize("server", sorted(LOCAL_SERVERS))
def test_local_server_specs_need_no_key(server: str) -> None:
    model = model_from_spec(f"{server}:qwen2.5")
    assert isinstance(model, OpenAIChatModel)
    assert model.base_url == LOCAL_SERVERS[server]
    assert model.name == f"{server}:qwen2.5"


def test_a_local_server_spec_without_a_model_name_is_an_error() -> None:
    with pytest.raises(ModelConfigError, match="ollama:<model name>"):
        model_from_spec("ollama")


@pytest.mark.parametrize("spec", ["fallible", "default", "embedded"])
def test_embedded_specs(spec: str, stub_fallible: type) -> None:
    assert isinstance(model_from_spec(spec), stub_fallible)


def test_an_unknown_spec_lists_what_works() -> None:
    with pytest.raises(ModelConfigError, match=r"unknown model spec 'gemini:pro'.*openai:<model>"):
        model_from_spec("gemini:pro")


def test_a_real_spec_without_its_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPNB_MODEL", "anthropic:claude-haiku-4-5")
    with pytest.raises(ModelConfigError, match="set ANTHROPIC_API_KEY"):
        from_env()


def test_without_the_embedded_model_the_error_says_what_to_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "loopnb.engine.models._fallible", None)
    with pytest.raises(ModelConfigError, match="set LOOPNB_MODEL"):
        from_env()


def test_the_embedded_default_is_the_real_fallible_model() -> None:
    from loopnb.engine.models import FallibleModel

    assert isinstance(from_env(), FallibleModel)
    assert isinstance(model_from_spec("fallible"), FallibleModel)


@pytest.mark.parametrize("spec", [" anthropic : claude-x ", "ANTHROPIC:claude-x", "anthropic:claude-x"])
def test_spaces_and_case_around_the_parts_of_a_spec_do_not_matter(spec: str) -> None:
    model = model_from_spec(spec, api_key="sk-ant-x")
    assert isinstance(model, AnthropicModel) and model.model == "claude-x"


@pytest.mark.parametrize("cls", [OpenAIChatModel, AnthropicModel])
@pytest.mark.parametrize("model", ["", "  ", None, 7])
def test_a_model_without_a_name_is_refused_at_once(cls: type, model: object) -> None:
    with pytest.raises(ModelConfigError, match=r"say which model to ask \(a model name\), got"):
        cls(model, base_url="http://127.0.0.1:9/v1")


@pytest.mark.parametrize("cls", [OpenAIChatModel, AnthropicModel])
@pytest.mark.parametrize(
    ("base_url", "shown"),
    [
        ("127.0.0.1:11434/v1", "'127.0.0.1:11434/v1'"),
        ("localhost:11434", "'localhost:11434'"),
        ("ftp://127.0.0.1/v1", "'ftp://127.0.0.1/v1'"),
        ("http:///v1", "'http:///v1'"),
        ("ftp://user:pw-secret@127.0.0.1/v1", "'ftp://127.0.0.1/v1'"),
    ],
)
def test_a_base_url_no_request_could_use_is_refused_at_once(cls: type, base_url: str, shown: str) -> None:
    with pytest.raises(ModelConfigError, match="must be an http:// or https:// URL") as info:
        cls("m", base_url=base_url)
    assert str(info.value).endswith(f"got {shown}")
    assert "pw-secret" not in str(info.value)


def test_a_base_url_from_the_environment_is_checked_and_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "127.0.0.1:8000/v1")
    with pytest.raises(ModelConfigError, match=r"base_url \(or \$OPENAI_BASE_URL\)"):
        OpenAIChatModel("m")


@pytest.mark.parametrize("cls", [OpenAIChatModel, AnthropicModel])
def test_a_blank_base_url_means_none(cls: type) -> None:
    assert cls("m", base_url="  ", api_key="sk-x").base_url is None
    assert cls("m", base_url=" http://127.0.0.1:9/v1 ").base_url == "http://127.0.0.1:9/v1"
