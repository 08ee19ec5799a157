"""Public mode, models: which names load, one message for every refused path, the size cap checked on the
hub before downloading (and a refusal when the hub cannot tell), safetensors only, runs named without
their server folder — each through a server's own AccessPolicy."""

from __future__ import annotations

import pytest
import transformers
from transformers import AutoTokenizer, BertForMaskedLM

from bertdemo.models import availability, load_errors, loading, store
from bertdemo.models.embedded import tokenizer_dir
from bertdemo.models.hub import HubProbe
from bertdemo.models.policy import REFUSED, AccessPolicy
from bertdemo.pretrain import checkpoints as ckpt
from bertdemo.viz.model_info import model_summary
from tests.helpers import tiny_bert_config


class Hub:
    """A hub probe whose answer the test sets."""

    def __init__(self, reachable: bool) -> None:
        self.reachable_now = reachable

    def reachable(self, timeout_s: float = 1.5) -> bool:
        return self.reachable_now


@pytest.fixture
def runs(tmp_path, monkeypatch):
    """A runs folder holding one run checkpoint; the working folder is tmp_path."""
    folder = tmp_path / "runs"
    checkpoint = folder / "20260101-000000-bert-tiny" / "steps" / "step-1"
    checkpoint.mkdir(parents=True)
    (checkpoint / "config.json").write_text("{}")
    (checkpoint / ckpt.STATE_FILE).write_text('{"step": 1}')
    (checkpoint.parent.parent / ckpt.LATEST_FILE).write_text("step-1\n")
    monkeypatch.chdir(tmp_path)
    return folder


def public_policy(runs, reachable: bool = False, **kwargs) -> AccessPolicy:
    return AccessPolicy(1.5, runs_dir=runs, hub=Hub(reachable), **kwargs)


def test_public_mode_refuses_every_path_with_one_message(runs, tmp_path):
    policy = public_policy(runs)
    (tmp_path / "secret-model").mkdir()
    (tmp_path / "secret-model" / "config.json").write_text("{}")
    (runs / ".uploads" / "abc").mkdir(parents=True)
    refused = ["/etc", "/no/such/folder", str(tmp_path / "secret-model"), "./secret-model",
               "../x", "~/x", str(runs / ".." / "secret-model"), str(runs / "no-such-run"),
               str(runs / ".uploads" / "abc"), str(runs), str(next(runs.glob("*"))),
               str(next(runs.glob("*/steps/step-1")))]  # a run's folder too: runs load by their run: names
    messages = set()
    for name in refused:
        with pytest.raises(ValueError) as err:
            loading._resolve(name, policy)
        messages.add(str(err.value))
    assert messages == {REFUSED}  # the same words whether or not the path exists
    assert str(tmp_path) not in REFUSED


@pytest.mark.parametrize("reachable", [False, True])
def test_a_hub_shaped_name_does_not_tell_whether_such_a_folder_exists(runs, tmp_path, monkeypatch, reachable):
    (tmp_path / "secret-model").mkdir()
    (tmp_path / "secret-model" / "config.json").write_text("{}")
    policy = public_policy(runs, reachable, size_lookup=lambda repo: 1000)

    def missing(*args, **kwargs):  # what the hub says of a model it does not have
        raise OSError(f"{args[0]} is not a local folder and is not a valid model identifier listed on the hub")

    def answer(name: str) -> str:
        try:
            store.load_masked_lm(name, "cpu", policy=policy, download=missing)
        except ValueError as err:
            return str(err).replace(name, "NAME")
        raise AssertionError(f"{name} loaded")

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", missing)
    assert answer("secret-model") == answer("secret-modelx")
    assert "secret-model" not in answer("secret-model") and "folder" not in answer("secret-model")


def test_load_errors_say_what_to_change_without_server_paths():
    cases = {
        OSError("Error no file named model.safetensors found in directory /srv/x/models/a."): "safetensors only",
        OSError("Error no file named model.safetensors, or pytorch_model.bin, found in directory /srv/x."):
            "has no weights file",
        OSError(36, "File name too long"): "too long",
        ValueError("Unrecognized model in /srv/x/a. Should have a `model_type` key in its config.json."):
            "names no model type",
        RuntimeError("Weights only load failed. Re-running `torch.load` with `weights_only` set to `False` will "
                     "likely succeed"): "pickle that cannot be loaded safely",
        RuntimeError("something odd in /srv/secret/place/file.bin, really"): "<folder>",
    }
    for exc, words in cases.items():
        message = load_errors.explain_load_error("a", exc)
        assert words in message and "/srv" not in message and "weights_only" not in message, message
    with pytest.raises(ValueError, match="characters long"):
        AccessPolicy().screen("x" * 300)


def test_public_mode_allows_hub_ids_embedded_and_own_runs(runs):
    policy = public_policy(runs)
    assert loading._resolve("bert-base-uncased", policy)[0] == "hub cache"
    assert loading._resolve("google/bert_uncased_L-2_H-128_A-2", policy)[0] == "hub cache"
    assert loading._resolve("run:20260101-000000-bert-tiny/checkpoint", policy)[0] == "local"
    with pytest.raises(ValueError, match="Only hub ids"):  # the same run by its folder: refused like any path
        loading._resolve(str(next(runs.glob("*/steps/step-1"))), policy)
    assert policy.load_kwargs() == {"use_safetensors": True}


def test_operator_model_stays_loadable(tmp_path):
    policy = AccessPolicy(1.5, allowed=frozenset({str(tmp_path)}), runs_dir=tmp_path / "runs")
    assert policy.screen(str(tmp_path)) is None
    with pytest.raises(ValueError, match="Only hub ids"):
        policy.screen(str(tmp_path.parent))


def test_a_public_server_names_the_operators_model_folder_without_its_path(tmp_path):
    from bertdemo.settings import ServerSettings

    folder = tmp_path / "secret-place" / "my-bert"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    settings = ServerSettings.build(runs_dir=tmp_path / "runs", public=True, allowed=(str(folder), "my/hub-bert"),
                                    default_model=str(folder))
    assert settings.default_model == "served:my-bert"  # what every tab starts with and the page shows
    policy = AccessPolicy(1.5, allowed=settings.public.allowed, runs_dir=tmp_path / "runs",
                          served=settings.public.served)
    assert loading._resolve("served:my-bert", policy)[:2] == ("local", str(folder))
    with pytest.raises(ValueError, match="Only hub ids"):  # its folder: refused like any other path
        loading._resolve(str(folder), policy)
    assert settings.public.allowed == frozenset({"my/hub-bert"})  # a hub id the operator chose keeps its name
    local = ServerSettings.build(runs_dir=tmp_path / "runs", allowed=(str(folder),), default_model=str(folder))
    assert local.default_model == str(folder)  # at localhost the folder is the operator's own to see


def test_local_mode_keeps_full_power(tmp_path):
    policy = AccessPolicy()
    assert policy.screen(str(tmp_path)) is None and policy.load_kwargs() == {}
    (tmp_path / "config.json").write_text("{}")
    assert loading._resolve(str(tmp_path), policy)[0] == "local"


def test_hub_size_cap_before_download(runs, monkeypatch):
    sizes = {"bert-large-uncased": int(2.0e9), "bert-base-uncased": int(0.44e9)}
    policy = public_policy(runs, reachable=True, size_lookup=sizes.__getitem__)
    with pytest.raises(ValueError, match="1.5 GB"):
        loading._resolve("bert-large-uncased", policy)
    assert loading._resolve("bert-base-uncased", policy)[0] == "hub"

    class Sibling:
        def __init__(self, name, size):
            self.rfilename, self.size = name, size

    class Info:
        siblings = [Sibling("model.safetensors", int(3e9)), Sibling("pytorch_model.bin", int(3e9)),
                    Sibling("config.json", 600)]

    import huggingface_hub
    monkeypatch.setattr(huggingface_hub, "model_info", lambda *a, **k: Info())
    with pytest.raises(ValueError, match="3.0 GB"):
        loading._resolve("someone/huge-bert", public_policy(runs, reachable=True))


def test_a_size_the_hub_cannot_tell_is_refused_and_not_remembered(runs):
    answers = {"someone/bert": [TimeoutError("read timed out"), int(0.4e9)]}
    asked = []

    def lookup(repo_id: str) -> int:
        asked.append(repo_id)
        answer = answers[repo_id].pop(0)
        if isinstance(answer, Exception):
            raise LookupError(type(answer).__name__) from answer
        return answer

    policy = public_policy(runs, reachable=True, size_lookup=lookup)
    with pytest.raises(ValueError, match="did not say how large someone/bert is"):
        loading._resolve("someone/bert", policy)  # no download on a failed lookup
    assert loading._resolve("someone/bert", policy)[0] == "hub"  # asked again: the failure was not cached
    assert loading._resolve("someone/bert", policy)[0] == "hub"  # the size is remembered
    assert asked == ["someone/bert", "someone/bert"]
    assert AccessPolicy(size_lookup=lookup).check_hub_size("anything") is None  # a local server does not ask


def test_size_lookups_keep_the_most_recently_used(runs, monkeypatch):
    monkeypatch.setattr("bertdemo.models.policy.SIZE_CACHE_ENTRIES", 2)
    asked = []
    policy = public_policy(runs, reachable=True, size_lookup=lambda repo: asked.append(repo) or 1000)
    for name in ("a/one", "a/two", "a/one", "a/three", "a/one"):
        policy.check_hub_size(name)
    assert asked == ["a/one", "a/two", "a/three"]  # "a/one", used last, was kept; "a/two" went out first


def test_runs_are_named_without_their_server_folder(tmp_path):
    runs = tmp_path / "srv" / "runs"
    target = ckpt.write_checkpoint(runs / "20260101-000000-bert-tiny", BertForMaskedLM(tiny_bert_config()), AutoTokenizer.from_pretrained(str(tokenizer_dir())),
                          {}, {"step": 3}, "")
    policy = AccessPolicy(runs_dir=runs, hub=HubProbe(offline=True))
    name = policy.run_reference(target)
    assert name == "run:20260101-000000-bert-tiny/checkpoint" and policy.resolve_run_reference(name) == str(target)
    assert policy.run_reference(runs / "x" / "steps" / "step-2") == "run:x/steps/step-2"  # (not the latest)
    for bad in ("run:../srv", "run:.uploads/checkpoint", "run:nope/checkpoint", "run:a/b", "run:20260101-000000-bert-tiny"):
        with pytest.raises(ValueError, match="There is no run") as err:
            policy.resolve_run_reference(bad)
        assert str(tmp_path) not in str(err.value)
    loaded = store.load_masked_lm(name, "cpu", policy=policy)
    assert loaded.name == name and str(tmp_path) not in model_summary(loaded) + loaded.note
    assert not availability.is_hub_id(name) and availability.can_load_now(name, policy.hub)
    public = AccessPolicy(1.5, runs_dir=runs, hub=HubProbe(offline=True))
    in_public = store.load_masked_lm(name, "cpu", policy=public)
    assert in_public.name == name and in_public.safetensors_only and not loaded.safetensors_only  # public mode too
