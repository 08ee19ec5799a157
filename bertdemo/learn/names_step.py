"""The Learn step "one vector per word, one label per word": token-level fine-tuning on the learner's sentence.

The sentence's words (:func:`bertdemo.corpus.names.words`), the name rule's label of each, the pieces the
tokenizer cuts them into and the label each piece gets (the word's on its first piece, -100 on the rest), the
model's own per-word vectors (its last layer, at each word's first piece) and the parameters the new token
classifier adds. Computed on the model in use; the snippet reproduces it with stock transformers.
"""

from __future__ import annotations

from bertdemo.corpus import names
from bertdemo.viz.text import md_table

MAX_WORDS_SHOWN = 14


def names_step(loaded, text: str, model_ref: str) -> tuple[str, dict, str]:
    """(Markdown, the numbers, the snippet) of the step on ``loaded`` and ``text``."""
    import torch

    from bertdemo.finetune.token_engine import IGNORE, align

    ws = names.words(text)
    if not ws:
        raise ValueError("Type a sentence with at least one word.")
    tags = names.tag_words(ws)
    label_ids = [IGNORE if t is None else names.LABELS.index(t) for t in tags]
    item = align(loaded.tokenizer, [ws], [label_ids], loaded.max_length)[0]
    ids = torch.tensor([item.ids], device=loaded.device)
    with torch.inference_mode():
        hidden = loaded.model.base_model(input_ids=ids).last_hidden_state[0]
    kept = [i for i, pos in enumerate(item.first_piece) if pos >= 0]
    vectors = hidden[[item.first_piece[i] for i in kept]]
    size = int(hidden.shape[-1])
    pieces = loaded.tokenizer.convert_ids_to_tokens(item.ids)
    rows = []
    for i in kept[:MAX_WORDS_SHOWN]:
        start = item.first_piece[i]
        end = next((item.first_piece[j] for j in range(i + 1, len(ws)) if item.first_piece[j] >= 0), len(pieces) - 1)
        labels = item.piece_labels[start:end]
        rows.append([ws[i], tags[i] or "—", " ".join(pieces[start:end]), " ".join(map(str, labels)),
                     f"{float(vectors[kept.index(i)].norm()):.2f}"])
    table = md_table(["word", "rule's label", "pieces", "labels the loss reads", "|vector|"],
                     rows)
    head = size * len(names.LABELS) + len(names.LABELS)
    md = (
        f"A sentence-level task reads one vector ([CLS]); a **token-level** task reads **one vector per word** and "
        f"gives **one label per word**. Your sentence has {len(ws)} words (punctuation counts as a word) and "
        f"{len(item.ids)} pieces; the model's last layer gives each piece a vector of {size} numbers, and "
        f"`BertForTokenClassification` puts one Linear layer ({size} × {len(names.LABELS)} + {len(names.LABELS)} = "
        f"**{head:,}** new parameters) on every piece. The transformers recipe labels each word's **first piece** and "
        "gives the others -100, which the loss skips, so a word counts once however many pieces it has; its "
        "prediction is read at that same piece. Here the labels are names, from the cased text: "
        f"{names.RULE}\n\n{table}"
        + (f"\n\n(The first {MAX_WORDS_SHOWN} words shown.)" if len(kept) > MAX_WORDS_SHOWN else "")
        + "\n\nThe Fine-tune tab trains it (Find the names), tags your sentences word by word, and probes which "
        "layer knows names."
    )
    nums = {"words": len(ws), "pieces": len(item.ids), "hidden": size, "head_parameters": head,
            "labelled_pieces": sum(label != IGNORE for label in item.piece_labels),
            "names": sum(t == names.NAME for t in tags)}
    snippet = (
        "import torch\nfrom transformers import AutoTokenizer, BertForTokenClassification\n\n"
        f"MODEL = {model_ref!r}\n"
        f"words = {ws!r}\n"
        f"labels = {label_ids!r}  # 1 NAME, 0 O, -100 no label (the sentence's first word, punctuation)\n"
        "tokenizer = AutoTokenizer.from_pretrained(MODEL)\n"
        "model = BertForTokenClassification.from_pretrained(MODEL, num_labels=2).eval()  # the classifier is new\n"
        "enc = tokenizer(words, is_split_into_words=True, return_tensors=\"pt\")\n"
        "piece_labels, previous = [], None\n"
        "for w in enc.word_ids():  # the word's label on its first piece, -100 on the rest and on [CLS] / [SEP]\n"
        "    piece_labels.append(labels[w] if w is not None and w != previous else -100)\n"
        "    previous = w\n"
        "with torch.inference_mode():\n"
        "    out = model(**enc, labels=torch.tensor([piece_labels]), output_hidden_states=True)\n"
        "print(tuple(out.hidden_states[-1].shape), tuple(out.logits.shape), sum(l != -100 for l in piece_labels))\n"
    )
    return md, nums, snippet
