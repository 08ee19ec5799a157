"""The learning path's steps, in the order the learners' notebooks go: tokens → embeddings →
attention → output and loss → masking and NSP → pretraining, then what the trained model's vectors hold,
what pretraining buys (fine-tuning) and what the model learned about people. Torch-free (the page lists them before
PyTorch loads); :mod:`bertdemo.learn.path` computes each step's answer.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_SENTENCE = "The cat sat on the mat because it was tired."


@dataclass(frozen=True)
class LearnStep:
    key: str  # the step's id (also the API's ``step`` value)
    stage: str  # where the notebooks are: tokens → embeddings → attention → output and loss → …
    question: str
    tab: str  # the tab that keeps exploring it (a gr.Tab id)
    tab_label: str


STEPS: tuple[LearnStep, ...] = (
    LearnStep("embeddings", "tokens → embeddings",
              "What does BERT get for my sentence: tokens, ids, segments, and the vectors they become?",
              "inside", "Inside BERT"),
    LearnStep("order", "embeddings",
              "Does BERT know the order of the words? Where does that knowledge come from?", "inside", "Inside BERT"),
    LearnStep("attention", "attention",
              "What does one attention head compute, step by step, for one token of my sentence?",
              "attention", "Attention"),
    LearnStep("outputs", "output and loss",
              "How do I run BERT for unmasking, and what does BertForMaskedLM(**inputs) return?",
              "fill-mask", "Fill-Mask"),
    LearnStep("loss", "output and loss",
              "What is the masked-LM loss for my sentence, number by number?", "inside", "Inside BERT"),
    LearnStep("rates", "masking and NSP",
              "Of the tokens chosen for prediction, why 80% [MASK], 10% random, 10% unchanged?",
              "masking", "Masking & NSP"),
    LearnStep("masks", "masking and NSP",
              "How many masks are used on the same sentence? Is it two for-loops?", "masking", "Masking & NSP"),
    LearnStep("nsp", "masking and NSP",
              "How are next-sentence pairs built, and what does P(IsNext) need?", "masking", "Masking & NSP"),
    LearnStep("family", "pretraining",
              "How many parameters do bert-base and bert-large have, and where are they?", "inside", "Inside BERT"),
    LearnStep("no-positions", "pretraining",
              "What if we pre-train without position embeddings?", "pretrain", "Pretrain"),
    LearnStep("length", "pretraining",
              "How does the 128 → 512 sequence-length extension work, and why?", "pretrain", "Pretrain"),
    LearnStep("tiny", "pretraining",
              "How do I train BERT-tiny from scratch (on TinyStories)?", "pretrain", "Pretrain"),
    LearnStep("live-run", "pretraining",
              "Will my run's held-out loss go below the word-before line within 2 minutes?", "pretrain", "Pretrain"),
    LearnStep("static-dynamic", "what the vectors hold",
              "Static vs dynamic embeddings: is a word the same vector in every sentence?", "words", "Word in context"),
    LearnStep("why-word", "what the vectors hold",
              "Which words of my sentence made the model predict the hidden word?", "words", "Word in context"),
    LearnStep("cls", "what pretraining buys",
              "What is the [CLS] vector for, and how does a classifier read it?", "finetune", "Fine-tune"),
    LearnStep("finetune", "what pretraining buys",
              "What does fine-tuning change, and with which learning rate, batch size and epochs?",
              "finetune", "Fine-tune"),
    LearnStep("why-pretrain", "what pretraining buys",
              "Why does pretraining help? Pretrained against random weights on the same task", "finetune", "Fine-tune"),
    LearnStep("layers", "what pretraining buys",
              "Which layer knows what: surface, syntax, meaning?", "finetune", "Fine-tune"),
    LearnStep("names", "what pretraining buys",
              "One vector per word, one label per word: how does BERT tag every word (find the names)?",
              "finetune", "Fine-tune"),
    LearnStep("why-b", "what pretraining buys",
              "Why the B in BERT? A masked LM and a left-to-right twin of the same size, one word hidden",
              "fill-mask", "Fill-Mask"),
    # what the model learned about people (the Hugging Face course's "bias and limitations")
    LearnStep("people", "what it learned about people",
              "What did the model learn about people? Two sentences that differ in one word, side by side",
              "fill-mask", "Fill-Mask"),
)
STEP_KEYS = tuple(s.key for s in STEPS)


def stages() -> list[str]:
    """The path's stages, in order, each once."""
    return list(dict.fromkeys(s.stage for s in STEPS))


def milestones() -> list[str]:
    """The stages' milestones in order, each once ("tokens → embeddings" then "embeddings": tokens, embeddings)."""
    return list(dict.fromkeys(part for stage in stages() for part in stage.split(" → ")))


def path_summary() -> str:
    """What the path holds, counted from :data:`STEPS`: "19 questions in 9 stages"."""
    return f"{len(STEPS)} questions in {len(stages())} stages"


def step(key: str) -> LearnStep:
    """The step named ``key``, or a ValueError listing the steps."""
    for s in STEPS:
        if s.key == key:
            return s
    raise ValueError(f"Unknown step {key!r}; the steps are {', '.join(STEP_KEYS)}.")


def step_label(s: LearnStep) -> str:
    """How the step reads in the step picker: its number and its question."""
    return f"{STEPS.index(s) + 1}. {s.question}"


def neighbour(key: str, offset: int) -> str:
    """The step ``offset`` places after ``key`` (kept within the path)."""
    i = STEP_KEYS.index(step(key).key) + int(offset)
    return STEP_KEYS[min(max(i, 0), len(STEP_KEYS) - 1)]
