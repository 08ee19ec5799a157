"""End-to-end API tests: the real app (offline, tiny masked-LM) driven through ``gradio_client``.

Covers the named endpoints of the three inference tabs (``/tokenize``, ``/lookup``,
``/compare_tokenizers``, ``/fill_mask``, ``/attention``), asserting on real content.
Bad input is in test_api_bad_input.py, which reuses the helpers below.
"""

from __future__ import annotations

import base64
import html
import json
import re
import time

import numpy as np
import pytest

gradio_client = pytest.importorskip("gradio_client")
from gradio_client import Client  # noqa: E402
from gradio_client.exceptions import AppError  # noqa: E402

EMBEDDED = "embedded/minilm-l6-uncased"
ENDPOINTS = {"/tokenize", "/lookup", "/compare_tokenizers", "/fill_mask", "/attention"}


# --- helpers ---------------------------------------------------------------------------


def chip_tokens(chips_html: str) -> list[tuple[int, str]]:
    """(id, token) of every chip in the chips HTML."""
    spans = re.findall(r'<span class="token-chip" data-id="(\d+)"[^>]*>(.*?)</span>', chips_html)
    return [(int(i), html.unescape(t)) for i, t in spans]


def table_records(table: dict) -> list[dict]:
    return [dict(zip(table["headers"], row)) for row in table["data"]]


def plotly_figure(plot) -> dict:
    """The plotly figure dict from a ``gr.Plot`` API value."""
    assert isinstance(plot, dict) and plot.get("type") == "plotly", plot
    return json.loads(plot["plot"])


def as_array(value) -> np.ndarray:
    """Decode a plotly array (a list, or the typed-array form ``{dtype, bdata, shape}``)."""
    if isinstance(value, dict) and "bdata" in value:
        arr = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        if "shape" in value:
            arr = arr.reshape([int(s) for s in str(value["shape"]).split(",")])
        return arr
    return np.asarray(value, dtype=float)


def expect_error(call, *fragments: str) -> str:
    """Run ``call``; it must raise AppError whose message contains every fragment (case-insensitive)."""
    with pytest.raises(AppError) as info:
        call()
    message = str(info.value)
    for fragment in fragments:
        assert fragment.lower() in message.lower(), f"{fragment!r} not in error message {message!r}"
    return message


def tokenize(client, text, pair="", model=""):
    return client.predict(text, pair, model, api_name="/tokenize")


def fill(client, text, model, pair="", top_k=5, targets=""):
    return client.predict(text, pair, model, top_k, targets, api_name="/fill_mask")


def attend(client, text, model, pair="", layer=0, head=0, mean=False, hide=False, renorm=True):
    return client.predict(text, pair, model, layer, head, mean, hide, renorm, api_name="/attention")


# --- the API surface ------------------------------------------------------------------


def test_named_endpoints_and_parameters(client):
    api = client.view_api(print_info=False, return_format="dict")
    named = api["named_endpoints"]
    assert ENDPOINTS <= set(named), sorted(named)
    params = {name: [p["parameter_name"] for p in named[name]["parameters"]] for name in ENDPOINTS}
    assert params["/tokenize"] == ["text", "text_pair", "model"]
    assert params["/fill_mask"] == ["text", "text_pair", "model", "top_k", "targets"]
    assert params["/attention"][:3] == ["text", "text_pair", "model"]
    assert len(params["/attention"]) == 8  # layer, head, mean, hide [CLS]/[SEP], renormalise


# --- Tokenizer ---------------------------------------------------------------------------


def test_tokenize_chips_table_and_segments(client, model):
    chips, stats, table = tokenize(client, "I love tokenization!", "Second one.", model)
    toks = chip_tokens(chips)
    assert toks[0] == (101, "[CLS]")
    assert (2293, "love") in toks
    assert any(t.startswith("##") for _, t in toks), toks
    assert [t for _, t in toks].count("[SEP]") == 2
    rows = table_records(table)
    by_token = {r["token"]: r for r in rows}
    assert by_token["[CLS]"]["id"] == 101 and by_token["[CLS]"]["position"] == 0
    assert by_token["love"]["id"] == 2293 and by_token["love"]["segment"] == 0
    assert by_token["##ization"]["id"] == 3989
    assert rows[-1]["token"] == "[SEP]" and rows[-1]["id"] == 102
    assert by_token["second"]["segment"] == 1 and by_token["second"]["word"] == "B0"
    assert [r["segment"] for r in rows] == [0] * 7 + [1] * 4
    assert all(r["attention mask"] == 1 for r in rows)
    assert "**11** tokens" in stats and "**1** words split" in stats and "**0** unknown" in stats


def test_lookup_and_special_tokens(client, model):
    token_md, id_md, specials = client.predict(model, "love", 103, api_name="/lookup")
    assert "2293" in token_md
    assert "[MASK]" in id_md
    roles = {r["role"]: (r["token"], r["id"]) for r in table_records(specials)}
    assert roles["cls_token"] == ("[CLS]", 101) and roles["sep_token"] == ("[SEP]", 102)
    assert roles["pad_token"] == ("[PAD]", 0) and roles["unk_token"] == ("[UNK]", 100)
    # A bad entry in one lookup is reported inline; the other still answers.
    token_md, id_md, _ = client.predict(model, "love", 999999, api_name="/lookup")
    assert "2293" in token_md and "outside the vocabulary" in id_md


def test_compare_tokenizers_same_model_and_unreachable_hub(client, model):
    left_stats, left_chips, right_stats, right_chips = client.predict(
        "Unbelievably good.", "", model, EMBEDDED, api_name="/compare_tokenizers"
    )
    assert chip_tokens(left_chips) == chip_tokens(right_chips)
    assert ("##bel" in left_chips) and "tokens" in left_stats and EMBEDDED in right_stats
    start = time.monotonic()
    expect_error(
        lambda: client.predict("Hi", "", model, "bert-base-cased", api_name="/compare_tokenizers"),
        "hub unreachable", "bert-base-cased",
    )
    assert time.monotonic() - start < 30  # no long hub retry loops (generous: not a benchmark)


def test_tokenize_control_characters_and_emoji(client, model):
    chips, stats, table = tokenize(client, "Tab\there\x00 bell\x07 and smile 🤗 done", "", model)
    toks = [t for _, t in chip_tokens(chips)]
    assert "[UNK]" in toks
    assert "\x00" not in chips and "\x07" not in chips
    assert "**1** unknown" in stats and "[UNK]" in stats
    assert {"tab", "here", "bell", "smile", "done"} <= set(toks)
    unk_rows = [r for r in table_records(table) if r["token"] == "[UNK]"]
    assert len(unk_rows) == 1 and unk_rows[0]["id"] == 100


def test_tokenize_100kb_paste_answers_with_a_length_notice(client, model):
    text = ("The quick brown fox jumps over the lazy dog. " * 2300)[:100_000]
    chips, stats, table = tokenize(client, text, "", model)
    assert "reads at most 512" in stats
    n_tokens = int(re.search(r"\*\*([\d,]+)\*\* tokens", stats).group(1).replace(",", ""))
    assert n_tokens > 20_000
    assert len(table["data"]) == 512  # only the first 512 shown
    assert len(chip_tokens(chips)) == 512


# --- Fill-Mask ---------------------------------------------------------------------------


def test_fill_mask_top_k_sorted_with_plot(client, model):
    plot, filled, targets_md, raw = fill(client, "Nice to [MASK] you.", model, top_k=7)
    fig = plotly_figure(plot)
    bars = [t for t in fig["data"] if t["type"] == "bar"]
    assert len(bars) == 1 and len(bars[0]["y"]) == 7
    assert len(raw) == 1
    preds = raw[0]["predictions"]
    assert len(preds) == 7
    probs = [p["prob"] for p in preds]
    assert probs == sorted(probs, reverse=True)
    assert all(0 <= p <= 1 for p in probs) and sum(probs) <= 1 + 1e-6
    assert [p["token"] for p in preds] == bars[0]["y"]
    top = preds[0]["token"]
    assert filled.startswith("**Filled with the top choices:**")
    assert re.search(rf"Nice to \*\*(##)?{re.escape(top.removeprefix('##'))}\*\* you\.", filled), filled
    assert targets_md == ""


def test_word_start_masks_offer_whole_words_and_glued_masks_read_without_marker(client, model):
    _, _, _, raw = fill(client, "Nice to [MASK] you.", model, top_k=50)
    assert not [p["token"] for p in raw[0]["predictions"] if p["token"].startswith("##")]
    _, filled, _, raw = fill(client, "Nice to meet[MASK] you.", model, top_k=50)
    tokens = [p["token"] for p in raw[0]["predictions"]]
    assert any(t.startswith("##") for t in tokens)  # a glued mask may continue the word
    assert f"meet**{tokens[0].removeprefix('##')}** you." in filled and "##" not in filled


def test_fill_mask_two_masks_and_targets(client, model):
    plot, filled, targets_md, raw = fill(
        client, "The [MASK] barked at the [mask].", model, top_k=3, targets="dog, tokenization"
    )
    assert [m["mask"] for m in raw] == [1, 2]
    assert raw[0]["position"] < raw[1]["position"]
    for mask in raw:
        assert len(mask["predictions"]) == 3
        by_word = {t["word"]: t for t in mask["targets"]}
        assert 0 < by_word["dog"]["prob"] <= 1 and by_word["dog"]["rank"] >= 1
        refusal = by_word["tokenization"]
        assert refusal["prob"] is None and "split into 2 pieces" in refusal["message"]
    assert "split into 2 pieces" in targets_md
    fig = plotly_figure(plot)
    assert len([t for t in fig["data"] if t["type"] == "bar"]) == 2
    assert filled.count("**") == 2 + 2 * 2  # the label plus two bold fills


def test_fill_mask_embedded_model_has_no_head(client):
    expect_error(lambda: fill(client, "Nice to [MASK] you.", EMBEDDED), "no trained masked-LM head")


# --- Attention ---------------------------------------------------------------------------


def test_attention_heatmap_rows_sum_to_one(client, model):
    plot, overview_path, info = attend(client, "Hello world.", model, layer=1, head=1)
    fig = plotly_figure(plot)
    heat = fig["data"][0]
    assert heat["type"] == "heatmap"
    z = as_array(heat["z"])
    assert z.shape == (5, 5)
    np.testing.assert_allclose(z.sum(axis=1), 1.0, atol=1e-3)
    assert heat["x"] == ["0: [CLS]", "1: hello", "2: world", "3: .", "4: [SEP]"]
    assert "Layer 1, head 1" in json.dumps(fig["layout"]["title"])
    assert "5 tokens" in info and "2 layers × 2 heads" in info
    from PIL import Image

    from bertdemo.viz.heatmaps import OverviewGeometry

    with Image.open(overview_path) as img:
        assert img.size == OverviewGeometry(2, 2).size


def test_attention_pair_hide_specials_and_clamped_layer(app_url, model):
    client = Client(app_url, verbose=False)
    plot, _, info = attend(
        client, "The cat sat.", model, pair="It slept.", layer=9, head=9, hide=True, renorm=True
    )
    # layer 9 / head 9 are clamped to the tiny model's last layer and head
    assert "Layer 1, head 1" in json.dumps(plotly_figure(plot)["layout"]["title"])
    heat = plotly_figure(plot)["data"][0]
    z = as_array(heat["z"])
    assert z.shape == (7, 7)  # 10 tokens minus [CLS] and two [SEP]
    assert not any("[CLS]" in x or "[SEP]" in x for x in heat["x"])
    np.testing.assert_allclose(z.sum(axis=1), 1.0, atol=1e-3)
    assert "renormalised" in info
    plot, *_ = attend(client, "The cat sat.", model, pair="It slept.", mean=True, hide=True, renorm=False)
    z = as_array(plotly_figure(plot)["data"][0]["z"])
    assert (z.sum(axis=1) < 1).all()


def test_attention_deeper_model_after_smaller_one_same_session(app_url, model):
    client = Client(app_url, verbose=False)
    attend(client, "Hello world.", model)  # 2 layers x 2 heads
    plot, _, info = attend(client, "Hello world.", EMBEDDED, layer=4, head=3)  # 6 x 12
    assert "Layer 4, head 3" in json.dumps(plotly_figure(plot)["layout"]["title"])
    assert "6 layers × 12 heads" in info
