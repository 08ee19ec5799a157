"""End-to-end API tests: the real app (offline, tiny masked-LM) driven through ``gradio_client``.

Covers the named endpoints of the three inference tabs (``/tokenize``, ``/lookup``,
``/compare_tokenizers``, ``/fill_mask``, ``/attention``), asserting on real content.
Bad input is in test_api_bad_input.py, which reuses the helpers below.
"""

from __future__ import annotations

import json
import re
import time

import numpy as np
from gradio_client import Client

from .api import as_array, attend, chip_tokens, expect_error, fill, plotly_figure, tokenize

EMBEDDED = "embedded/minilm-l6-uncased"
EMBEDDED_MLM = "embedded/bert-explorer-mlm"
CASED = "embedded/wordpiece-cased-wiki"
ENDPOINTS = {"/tokenize", "/lookup", "/compare_tokenizers", "/fill_mask", "/attention"}


# --- helpers ---------------------------------------------------------------------------


def table_records(table: dict) -> list[dict]:
    return [dict(zip(table["headers"], row)) for row in table["data"]]


# --- the API surface ------------------------------------------------------------------


def test_named_endpoints_and_parameters(client):
    api = client.view_api(print_info=False, return_format="dict")
    named = api["named_endpoints"]
    assert ENDPOINTS <= set(named), sorted(named)
    params = {name: [p["parameter_name"] for p in named[name]["parameters"]] for name in ENDPOINTS}
    assert params["/tokenize"] == ["text", "text_pair", "model"]
    assert params["/fill_mask"] == ["text", "text_pair", "model", "top_k", "targets", "second_model", "whole_words",
                                    "fast"]
    assert params["/attention"][:3] == ["text", "text_pair", "model"]
    assert len(params["/attention"]) >= 8  # layer, head, mean, hide [CLS]/[SEP], renormalise, ...


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
    assert table["headers"] == ["position", "token", "input_ids", "token_type_ids", "attention_mask", "word", "chars"]
    assert by_token["[CLS]"]["input_ids"] == 101 and by_token["[CLS]"]["position"] == 0
    assert by_token["love"]["input_ids"] == 2293 and by_token["love"]["token_type_ids"] == 0
    assert by_token["##ization"]["input_ids"] == 3989
    assert rows[-1]["token"] == "[SEP]" and rows[-1]["input_ids"] == 102
    assert by_token["second"]["token_type_ids"] == 1 and by_token["second"]["word"] == "B0"
    assert [r["token_type_ids"] for r in rows] == [0] * 7 + [1] * 4
    assert all(r["attention_mask"] == 1 for r in rows)
    assert "**11** tokens" in stats and "**1** word split" in stats and "**0** unknown" in stats
    assert f"**{model}**" in stats  # the tokenizer that answered


def test_encode_returns_what_the_tokenizer_returns(client, model):
    from transformers import AutoTokenizer

    out = client.predict("I love tokenization!", "Second one.", model, api_name="/encode")
    expected = AutoTokenizer.from_pretrained(model)("I love tokenization!", "Second one.")
    assert out["input_ids"] == expected["input_ids"]
    assert out["token_type_ids"] == expected["token_type_ids"] == [0] * 7 + [1] * 4
    assert out["attention_mask"] == expected["attention_mask"]
    assert out["tokens"][:4] == ["[CLS]", "i", "love", "token"] and out["tokenizer"] == model
    assert out["truncated"] is False


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


def test_compare_uncased_with_the_offline_cased_tokenizer(client, model):
    left_stats, left_chips, right_stats, right_chips = client.predict(
        "Naïve BERT", "", model, CASED, api_name="/compare_tokenizers"
    )
    left, right = [t for _, t in chip_tokens(left_chips)], [t for _, t in chip_tokens(right_chips)]
    assert "naive" in left and "bert" in left  # uncased: lowercased, accent stripped
    assert "".join(right).replace("##", "").startswith("[CLS]NaïveBERT")  # cased: as typed
    assert "`Naïve` → `naive`" in left_stats and "changes the text" not in right_stats
    assert CASED in right_stats


def test_typed_special_tokens_render_dark_and_lookup_is_bounded(client, model):
    chips, _, _ = tokenize(client, "Nice to [MASK] you.", "", model)
    mask_chip = re.search(r'<span class="token-chip" data-id="103"[^>]*style="([^"]*)"', chips).group(1)
    assert "background:#374151" in mask_chip  # special tokens are dark
    token_md, _, _ = client.predict(model, "x" * 101, 103, api_name="/lookup")
    assert "at most 100" in token_md


def test_tokenize_control_characters_and_emoji(client, model):
    chips, stats, table = tokenize(client, "Tab\there\x00 bell\x07 and smile 🤗 done", "", model)
    toks = [t for _, t in chip_tokens(chips)]
    assert "[UNK]" in toks
    assert "\x00" not in chips and "\x07" not in chips
    assert "**1** unknown" in stats and "[UNK]" in stats
    assert {"tab", "here", "bell", "smile", "done"} <= set(toks)
    unk_rows = [r for r in table_records(table) if r["token"] == "[UNK]"]
    assert len(unk_rows) == 1 and unk_rows[0]["input_ids"] == 100


def test_tokenize_100kb_paste_answers_with_a_length_notice(client, model):
    text = ("The quick brown fox jumps over the lazy dog. " * 2300)[:100_000]
    chips, stats, table = tokenize(client, text, "", model)
    assert "reads at most 512" in stats
    n_tokens = re.search(r"\*\*([\d,]+)\*\* tokens", stats).group(1)
    assert "," in n_tokens and int(n_tokens.replace(",", "")) > 20_000  # 20,002 tokens
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
    assert all(t.startswith("##") for t in tokens)  # glued to letters: only pieces that continue the word
    assert f"meet**{tokens[0].removeprefix('##')}** you." in filled and "##" not in filled


def test_fill_mask_two_masks_and_targets(client, model):
    plot, filled, targets_md, raw = fill(
        client, "The [MASK] barked at the [mask].", model, top_k=3, targets="dog, tokenization, a|<b>"
    )
    assert [m["mask"] for m in raw] == [1, 2] and {m["model"] for m in raw} == {model}
    assert raw[0]["position"] < raw[1]["position"]
    for mask in raw:
        assert len(mask["predictions"]) == 3
        by_word = {t["word"]: t for t in mask["targets"]}
        assert 0 < by_word["dog"]["prob"] <= 1 and by_word["dog"]["rank"] >= 1
        split = by_word["tokenization"]  # token ##ization: scored by pseudo-log-likelihood
        assert split["pieces"] == ["token", "##ization"] and 0 < split["prob"] < 1 and split["rank"] is None
        assert "pseudo-log-likelihood" in split["message"]
    # a readable table: one header, one row per mask and word, user text escaped
    lines = targets_md.splitlines()
    assert lines[0] == "| mask | word | pieces | probability | rank |" and lines[1] == "|---|---|---|---|---|"
    assert len([line for line in lines if line.startswith("| #")]) == 6
    assert "a&#124;&#60;b&#62;" in targets_md and "<b>" not in targets_md
    assert all(cell.strip().endswith("%") for line in lines[2:8] for cell in line.split("|")[4:5] if "—" not in cell)
    fig = plotly_figure(plot)
    assert len([t for t in fig["data"] if t["type"] == "bar"]) == 2
    assert filled.count("**Filled with the top choices:**") == 1 and f"*Answered by* **{model}**" in filled


def test_fill_mask_second_model_and_whole_words(client, model):
    plot, filled, _, raw = fill(client, "Nice to [MASK] you.", model, top_k=4, second=EMBEDDED_MLM)
    assert [m["model"] for m in raw] == [model, EMBEDDED_MLM]
    assert filled.count("**Filled with the top choices:**") == 2 and EMBEDDED_MLM in filled
    fig = plotly_figure(plot)
    assert len([t for t in fig["data"] if t["type"] == "bar"]) == 2
    assert EMBEDDED_MLM in json.dumps(fig["layout"]["annotations"])
    _, filled, _, raw = fill(client, "Nice to [MASK] you.", model, top_k=6, whole_words=True)
    preds = raw[0]["predictions"]
    assert 1 <= len(preds) <= 6 and all(1 <= len(p["pieces"]) <= 3 for p in preds)
    assert "pseudo-log-likelihood" in filled


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
    assert "(B, H, S, S) = (1, 2, 5, 5)" in info  # the shape a notebook prints for outputs.attentions[l]
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


def test_the_started_server_leaves_its_long_lived_objects_out_of_full_collections(app_server):
    """Once the default model is in, the server freezes what it holds for life (bertdemo/gc_pauses.py): a full
    garbage collection then walks only what came later, not half a second of startup objects."""
    from pathlib import Path

    from tests.helpers import wait_until

    log = Path(app_server[1].log_path)
    line = re.compile(r"(\d+) long-lived objects left out of full garbage collections")
    wait_until(lambda: line.search(log.read_text(errors="replace")), timeout=120, interval=0.2,
               what="the default model's warm-up")
    assert int(line.search(log.read_text(errors="replace")).group(1)) > 100_000  # torch, transformers, gradio
