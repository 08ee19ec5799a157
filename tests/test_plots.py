"""Figures: bars highest on top with targets appended, heatmap labels, clickable overview geometry."""

import numpy as np
import pytest

from bertdemo.explore import attention, fill_mask
from bertdemo.viz import bars, heatmaps


def test_fill_mask_figure_has_one_chart_per_mask(tiny_loaded):
    wide = fill_mask.predict(tiny_loaded, "a [MASK] b [MASK]", top_k=50)
    # a whole word ranked below the top 4 at the first mask: it must be appended as a target bar
    rank, word = next((i + 1, c.token) for i, c in enumerate(wide.masks[0].candidates)
                      if i >= 4 and c.token.isalpha())
    result = fill_mask.predict(tiny_loaded, "a [MASK] b [MASK]", top_k=4, targets=[word])
    fig = bars.fill_mask_figure(result.masks)
    assert len(fig.data) == 2
    first = fig.data[0]
    assert list(first.x[:4]) == sorted(first.x[:4], reverse=True)
    assert fig.layout.yaxis.autorange == "reversed"  # highest probability on top
    assert result.masks[0].targets[0].rank == rank
    assert list(first.y[4:]) == [f"{word} (rank {rank:,})"]
    assert list(first.marker.color[4:]) == [bars._TARGET_COLOR]


def test_heatmap_and_overview(tiny_loaded):
    result = attention.compute(tiny_loaded, "the cat sat")
    view = attention.select_view(result, 0, 0)
    fig = heatmaps.attention_heatmap(view)
    assert fig.data[0].type == "heatmap" and len(fig.data[0].y) == len(result.tokens)
    top = float(view.matrix.max())  # the colours run from 0 to the largest weight, and the bar says so
    assert (fig.data[0].zmin, fig.data[0].zmax) == (0, pytest.approx(top))
    assert list(fig.data[0].colorbar.tickvals) == pytest.approx([0.0, top / 2, top])
    assert list(fig.data[0].colorbar.ticktext) == ["0.00", f"{top / 2:.2f}", f"{top:.2f}"]
    img = heatmaps.attention_overview(result.attentions, selected=(1, 0))
    geo = heatmaps.OverviewGeometry(2, 2)
    assert img.size == geo.size
    x = geo.left + 1 * (geo.cell + geo.gap) + 5
    y = geo.top + 1 * (geo.cell + geo.gap) + 5
    assert geo.cell_at(x, y) == (1, 1)
    assert geo.cell_at(2, 2) is None
    assert np.asarray(img).std() > 0


@pytest.mark.parametrize("which", ["head", "rollout", "token", "hidden"])
def test_an_unchecked_figure_is_what_plotly_s_validation_makes_of_it(tiny_loaded, which):
    """A heatmap built without plotly's validation (style.unchecked_figure): validated again, it comes out the
    same, so every property is one plotly knows, in the form its validation would give it."""
    from tests.helpers import assert_as_validated

    result = attention.compute(tiny_loaded, "the cat sat", "on the mat")
    view = {"head": lambda: attention.select_view(result, 0, 1),
            "rollout": lambda: attention.rollout_view(result, 1, False, True, "all"),
            "token": lambda: attention.token_across_layers(result, 2, False, True),
            "hidden": lambda: attention.select_view(result, 1, None, True, True, "A->B")}[which]()
    assert_as_validated(heatmaps.attention_heatmap(view))


def test_each_overview_cell_draws_its_heads_weights(tiny_loaded):
    """Cell (layer, head) is that head's (S, S) map upscaled, each map scaled by its own largest weight: the
    pixels of its largest weight are viridis yellow, those of its smallest the darkest of the cell."""
    result = attention.compute(tiny_loaded, "the cat sat on the mat")
    weights = result.attentions  # (L, H, S, S)
    n_layers, n_heads, s, _ = weights.shape
    indices = heatmaps.overview_pixels(weights)
    pixels = heatmaps.OVERVIEW_PALETTE[indices]  # (height, width, 3) RGB
    assert np.array_equal(np.asarray(heatmaps.with_selection(indices, None).convert("RGB")), pixels)
    geo = heatmaps.OverviewGeometry(n_layers, n_heads)
    for layer in range(n_layers):
        for head in range(n_heads):
            y0, x0 = geo.top + layer * (geo.cell + geo.gap), geo.left + head * (geo.cell + geo.gap)
            cell = pixels[y0:y0 + geo.cell, x0:x0 + geo.cell].astype(int)
            at = lambda i, j, cell=cell: cell[i * geo.cell // s + 1, j * geo.cell // s + 1]  # inside that weight's block
            top = np.unravel_index(weights[layer, head].argmax(), (s, s))
            low = np.unravel_index(weights[layer, head].argmin(), (s, s))
            assert at(*top).tolist() == [253, 231, 37]
            assert at(*low).sum() == cell.sum(axis=-1).min()


def test_overviews_of_two_sentences_share_only_their_labels(tiny_loaded):
    """The labelled frame is drawn once per model shape: each overview is its own array (a caller marking one
    changes no other), and the second sentence's cells are its own."""
    first = heatmaps.overview_pixels(attention.compute(tiny_loaded, "the cat sat on the mat").attentions)
    first[:, :] = 0  # a caller's changes stay in its copy
    weights = attention.compute(tiny_loaded, "a dog ran").attentions
    second = heatmaps.overview_pixels(weights)
    geo = heatmaps.OverviewGeometry(*weights.shape[:2])
    assert second.shape == geo.size[::-1] and second.flags.writeable
    assert (second[:geo.top] != 0).all()  # the labels' band is white and black, not the caller's zeros
    assert set(np.unique(second[:geo.top])) == {heatmaps._WHITE, heatmaps._BLACK}  # the labels


def test_targets_inside_the_top_k_are_highlighted(tiny_loaded):
    result = fill_mask.predict(tiny_loaded, "a [MASK] b", top_k=5)
    second = result.masks[0].candidates[1]
    result = fill_mask.predict(tiny_loaded, "a [MASK] b", top_k=5, targets=[second.token])
    bar = bars.fill_mask_figure(result.masks).data[0]
    assert list(bar.y)[1] == f"{second.token} ◀ target" and len(bar.y) == 5  # not appended twice
    assert list(bar.marker.color) == [bars._BAR_COLOR, bars._TARGET_COLOR] + [bars._BAR_COLOR] * 3


def test_axis_fits_the_bars_and_probabilities_are_percent(tiny_loaded):
    result = fill_mask.predict(tiny_loaded, "a [MASK] b", top_k=3)
    fig = bars.fill_mask_figure(result.masks)
    assert fig.layout.xaxis.range[1] > max(fig.data[0].x)
    assert all(t.endswith("%") for t in fig.data[0].text)
    assert bars.percent(0.1234) == "12.3%" and bars.percent(0.00042) == "0.042%"
    assert bars.percent(1.9e-7) == "0.000019%"  # never e-notation
    # one rule on both sides of 1 %: one decimal from 1 %, two significant digits below
    assert [bars.percent(p) for p in (0.01, 0.0099, 0.00999, 0.005, 0.001, 0.00095)] == [
        "1.0%", "0.99%", "1.0%", "0.50%", "0.10%", "0.095%"]
    assert fig.layout.xaxis.tickformat == ".2~%"


def test_two_models_get_a_chart_each_per_mask(tiny_loaded):
    one = fill_mask.predict(tiny_loaded, "a [MASK] b [MASK]", top_k=3)
    fig = bars.fill_mask_figure(one.masks, ["model-a", "model-b"], [one.masks])
    titles = [a.text for a in fig.layout.annotations]
    assert len(fig.data) == 4 and titles[0].endswith("<br>model-a") and titles[1].endswith("<br>model-b")
    # the gap between two charts holds the upper one's tick labels and the lower one's two title lines (at 390 px the
    # title ran over the ticks: 53 px for them both)
    plot_px = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    gap_px = (fig.layout.yaxis.domain[0] - fig.layout.yaxis2.domain[1]) * plot_px
    assert gap_px >= 20 + 2 * 20 + 10, gap_px


def test_stacked_charts_sit_where_make_subplots_puts_them(tiny_loaded):
    from plotly.subplots import make_subplots

    result = fill_mask.predict(tiny_loaded, "a [MASK] b [MASK] c [MASK]", top_k=3, targets=["zebra"])
    fig = bars.fill_mask_figure(result.masks)
    heights = [bars._ROW_PX * len(bar.y) + 40 for bar in fig.data]
    reference = make_subplots(rows=3, cols=1, vertical_spacing=0.1, row_heights=heights)
    for axis in ("yaxis", "yaxis2", "yaxis3"):
        assert fig.layout[axis].domain == pytest.approx(reference.layout[axis].domain)
    assert [bar.yaxis for bar in fig.data] == ["y", "y2", "y3"]
    assert fig.layout.annotations[2].y == pytest.approx(reference.layout.yaxis3.domain[1])


def test_fill_mask_result_as_text_and_json(tiny_loaded):
    result = fill_mask.predict(tiny_loaded, "a [MASK] b", "c [MASK]", top_k=3, targets=["dog", "x|y"])
    assert result.filled == [m.candidates[0].text for m in result.masks]
    assert bars.filled_markdown(result) == f"a **{result.filled[0]}** b / c **{result.filled[1]}**"
    lines = bars.targets_markdown([("model", result)]).splitlines()
    assert lines[0] == "| mask | word | pieces | probability | rank |" and lines[1] == "|---|---|---|---|---|"
    rows = [line for line in lines if line.startswith("| #")]
    assert len(rows) == 4 and all(row.count(" | ") == 4 for row in rows)  # "x|y" cannot add a column
    raw = bars.predictions_json(result, "model")
    assert [m["mask"] for m in raw] == [1, 2] and [t["word"] for t in raw[0]["targets"]] == ["dog", "x|y"]
    assert raw[0]["predictions"][0]["id"] == result.masks[0].candidates[0].id


def test_two_models_charts_of_one_mask_share_their_scale(tiny_loaded):
    """The same mask through two models: one chart each, on one scale, so the bars compare (each chart on its own
    scale drew a 1.3 % bar as long as the other's 2.1 %); another mask keeps its own."""
    text = "a [MASK] b [MASK]"
    ours = fill_mask.predict(tiny_loaded, text, top_k=3)
    halved = [m.__class__(**{**m.__dict__, "candidates": [c.__class__(**{**c.__dict__, "prob": c.prob / 2})
                                                          for c in m.candidates]}) for m in ours.masks]
    fig = bars.fill_mask_figure(ours.masks, ["one", "two"], more=[halved])
    ranges = [fig.layout[f"xaxis{'' if i == 1 else i}"].range[1] for i in range(1, 5)]  # mask 1: one, two; mask 2
    assert ranges[0] == ranges[1] == pytest.approx(max(c.prob for c in ours.masks[0].candidates) * 1.35, abs=1e-8)
    assert ranges[2] == ranges[3] == pytest.approx(max(c.prob for c in ours.masks[1].candidates) * 1.35, abs=1e-8)
