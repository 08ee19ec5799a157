"""One rule for a typed ``[SEP]``, in every view and every snippet: it starts sentence B.

``"A [SEP] B"`` typed into one box is read as the pair (A, B) — segment 0 for A, segment 1 for B —
exactly as if B had been typed into a "sentence B" box. Only the first ``[SEP]`` splits; later ones
become spaces. A view with its own sentence-B box keeps what is in it (the rule applies when that box
is empty). Torch-free: "Show the code" uses it to write the same pair into a snippet.
"""

from __future__ import annotations

SEP = "[SEP]"


def split_pair(text: str, text_pair: str | None = None, sep_token: str | None = None) -> tuple[str, str | None]:
    """(sentence A, sentence B or None): a typed ``[SEP]`` (or the tokenizer's own ``sep_token``) in
    ``text`` starts sentence B when ``text_pair`` is blank; a blank sentence B is None."""
    if text_pair and text_pair.strip():
        return text, text_pair
    for sep in dict.fromkeys((SEP, sep_token or SEP)):
        if sep in text:
            first, second = text.split(sep, 1)
            return first.strip(), (second.replace(sep, " ").strip() or None)
    return text, None
