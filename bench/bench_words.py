"""Word in context: the similarity view click to picture in Chromium, attribution of a 20-token sentence, the
neighbour index's build time and memory, a neighbour query, and integrated gradients' completeness and
removal on the cloze set, on the embedded model (CPU).

    python bench/bench_words.py                 # 5 repetitions of the in-process timings, 18 clicks
    python bench/bench_words.py --clicks 0      # in-process timings only

In process: :func:`bertdemo.explore.attribution.attribute` (default 50 steps; integrated gradients alone,
then all three methods), :func:`bertdemo.explore.corpus_neighbours.neighbour_index` (a fresh store each
repetition; the bytes it holds and the process's peak RSS growth), and :func:`neighbours` once the index is
built (its query sentence differs each time: no answer cache). In the browser: ``python app.py --offline``
with the embedded model, the Word in context tab, "Compare the vectors" with another sense set each click
(a sentence list not seen before, so nothing comes from a cache); the time runs from the click to the
figure whose title names that word having been drawn (read at the next animation frame).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ATTR_TEXT = "After a long day at work she drank a cup of hot [MASK] and read a book."  # 20 tokens with [CLS]/[SEP]
CLOZE = Path(__file__).resolve().parents[1] / "data" / "cloze_confirm.tsv"
QUERIES = ["We sat on the bank of the river.", "The bank raised its rates.", "A bank of fog rolled in.",
           "She works at a bank downtown.", "The river bank was muddy.", "He robbed the bank."]


def spread(values: list[float]) -> str:
    values = sorted(values)
    return f"median {statistics.median(values):.3f} (min {values[0]:.3f}, max {values[-1]:.3f}, n={len(values)})"


def in_process(reps: int) -> None:
    from bertdemo.explore import attribution, corpus_neighbours, word_vectors
    from bertdemo.models import embedded
    from bertdemo.models.store import load_masked_lm

    loaded = load_masked_lm(str(embedded.mlm_dir()), "cpu")
    print(f"attribution text: {len(loaded.tokenizer(ATTR_TEXT)['input_ids'])} tokens")
    attribution.attribute(loaded, ATTR_TEXT)  # warm-up (captum import, first graph)
    ig = [_timed(lambda: attribution.attribute(loaded, ATTR_TEXT, methods=("integrated gradients",))) for _ in range(reps)]
    every = [_timed(lambda: attribution.attribute(loaded, ATTR_TEXT)) for _ in range(reps)]
    print(f"attribution, integrated gradients (50 steps) s: {spread(ig)}")
    print(f"attribution, all three methods s: {spread(every)}")
    cloze = [line.split("\t")[0] for line in CLOZE.read_text().splitlines() if line and not line.startswith("#")]
    checked = attribution.faithfulness(loaded, cloze)  # the test checks the first 12
    print(f"integrated gradients on the {checked.sentences} cloze sentences of {CLOZE.name}: they add up within "
          f"{checked.gap_percent:g} % on {checked.complete}; removing the top 20 % hurts more than a random 20 % on "
          f"{checked.removal_hurts} (targets: ≥ 90 % and ≥ 80 %)")
    word_vectors.corpus_sentences(loaded)  # the corpus read once, as in the app
    builds, sizes = [], []
    for _ in range(reps):
        word_vectors.activation_store(loaded).clear()  # a fresh store: the index is built again
        word_vectors.corpus_sentences(loaded)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        builds.append(_timed(lambda: corpus_neighbours.neighbour_index(loaded, 4)))
        sizes.append((word_vectors.activation_store(loaded).bytes_held, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss))
    index = corpus_neighbours.neighbour_index(loaded, 4)
    print(f"index build (layer 4, {len(index.tokens):,} tokens) s: {spread(builds)}")
    print(f"index held: {index.nbytes / 2**20:.1f} MB (vectors {index.vectors.nbytes / 2**20:.1f} MB); "
          f"peak RSS growth on the first build: {sizes[0][1] / 1024:.0f} MB")
    queries = [_timed(lambda q=q: corpus_neighbours.neighbours(loaded, q, 3, 4, 10)) * 1000
               for q in QUERIES * max(1, reps)]
    print(f"neighbour query ms (forward of the sentence + search): {spread(queries)}")


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def browser(clicks: int) -> None:
    from playwright.sync_api import sync_playwright

    from bench.app_harness import App
    from bertdemo.assets import sense_sets

    with App("--model", "embedded/bert-explorer-mlm") as app:
        url = app.url
        with sync_playwright() as p:
            chrome = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox", "--disable-gpu"])
            page = chrome.new_page(viewport={"width": 1280, "height": 1000})
            page.goto(url)
            page.locator("[role=tablist] [role=tab]").filter(has_text="Word in context").click()
            page.wait_for_function("() => document.querySelector('#wic-sim-plot .js-plotly-plot')", timeout=180_000)
            times = []
            for i in range(clicks):
                word = sense_sets.WORDS[(i + 1) % len(sense_sets.WORDS)]  # never the word shown
                lines = sense_sets.default_lines(word).splitlines()
                lines = lines[i // len(sense_sets.WORDS) % 2:] + lines[:i // len(sense_sets.WORDS) % 2]  # new order
                page.locator("#wic-word input, #wic-word textarea").first.fill(word)
                page.locator("#wic-sentences textarea").fill("\n".join(lines) + "\n" * (i // len(sense_sets.WORDS)))
                start = time.perf_counter()
                page.click("#wic-run")
                page.wait_for_function(
                    "w => { const p = document.querySelector('#wic-sim-plot .js-plotly-plot');"
                    " return p && p.layout && p.layout.title.text.includes(w)"
                    " && new Promise(r => requestAnimationFrame(() => r(true))); }", arg=f"'{word}'", timeout=60_000)
                times.append((time.perf_counter() - start) * 1000)
            times.sort()
            p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
            print(f"similarity view, click to picture ms: {spread(times)}; p95 {p95:.0f}")
            print("  each:", [round(t) for t in times])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--clicks", type=int, default=18)
    args = parser.parse_args()
    in_process(args.reps)
    if args.clicks:
        browser(args.clicks)


if __name__ == "__main__":
    main()
