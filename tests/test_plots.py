"""Figures: bars highest on top with targets appended, heatmap labels, clickable overview geometry."""

import numpy as np

from bertdemo import attention, fill_mask, plots


def test_fill_mask_figure_has_one_chart_per_mask(tiny_loaded):
    result = fill_mask.predict(tiny_loaded, "a [MASK] b [MASK]", top_k=4, targets=["meet"])
    fig = plots.fill_mask_figure(result.masks)
    assert len(fig.data) == 2
    bars = fig.data[0]
    assert list(bars.x[:4]) == sorted(bars.x[:4], reverse=True)
    assert fig.layout.yaxis.autorange == "reversed"  # highest probability on top
    target = result.masks[0].targets[0]
    if target.rank > 4:
        assert bars.y[-1].startswith("meet (target")


def test_heatmap_and_overview(tiny_loaded):
    result = attention.compute(tiny_loaded, "the cat sat")
    view = attention.select_view(result, 0, 0)
    fig = plots.attention_heatmap(view)
    assert fig.data[0].type == "heatmap" and len(fig.data[0].y) == len(result.tokens)
    img = plots.attention_overview(result.attentions, selected=(1, 0))
    geo = plots.OverviewGeometry(2, 2)
    assert img.size == geo.size
    x = geo.left + 1 * (geo.cell + geo.gap) + 5
    y = geo.top + 1 * (geo.cell + geo.gap) + 5
    assert geo.cell_at(x, y) == (1, 1)
    assert geo.cell_at(2, 2) is None
    assert np.asarray(img).std() > 0
