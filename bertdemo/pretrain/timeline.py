"""The moments of a run worth marking: the first time its held-out loss goes below each landmark, and
the first time each probe's expected word enters the top 5. Torch-free; the metrics buffer calls these
after every evaluation and records each event once (with the step, tokens seen and training time).
"""

from __future__ import annotations

from bertdemo.pretrain.landmarks import LANDMARK_LABELS
from bertdemo.pretrain.probes import IN_TOP

MARKED_LANDMARKS = ("unigram", "left", "both")  # the uniform guess is where every run starts


def landmark_events(loss: float, landmarks: dict[str, float], recorded: list[dict]) -> list[dict]:
    """Events for the landmarks that ``loss`` is below for the first time (not yet in ``recorded``)."""
    done = {e.get("landmark") for e in recorded if e.get("kind") == "landmark"}
    return [{"kind": "landmark", "landmark": name, "label": LANDMARK_LABELS[name], "value": landmarks[name]}
            for name in MARKED_LANDMARKS if name in landmarks and name not in done and loss < landmarks[name]]


def length_event(previous: int, length: int) -> dict:
    """The schedule moved to longer blocks: from here positions ``previous``..``length - 1`` train too."""
    return {"kind": "length", "length": length, "previous": previous,
            "label": f"blocks of {previous} → {length} tokens (positions {previous}-{length - 1} train from here)"}


def probe_events(tracks: list[dict], recorded: list[dict]) -> list[dict]:
    """Events for the probes whose expected word is in the top 5 now for the first time."""
    done = {(e.get("text"), e.get("expected")) for e in recorded if e.get("kind") == "probe"}
    events = []
    for track in tracks:
        rank = track["ranks"][-1] if track["ranks"] else None
        key = (track["text"], track["expected"])
        if rank is not None and rank <= IN_TOP and key not in done:
            events.append({"kind": "probe", "text": track["text"], "expected": track["expected"], "rank": rank,
                           "label": f"“{track['expected']}” in the top {IN_TOP}"})
    return events
