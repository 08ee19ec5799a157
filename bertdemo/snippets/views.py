""""Show the code": the few lines of transformers / torch that reproduce a view's numbers in a notebook.

Each function returns Python source filled with the learner's own inputs and the model's name (as
Python literals, so any text is safe to paste). The snippets use stock transformers only — no
bertdemo — and print the numbers the view shows; tests run every one on a tiny model and compare.
Torch-free (plain strings): the page fills them without loading anything.

Every value placed in a snippet is a Python literal (``repr``) or a validated number; comments are fixed
text and never carry the learner's input or a model name. The snippets read the input the way the views
do: a typed ``[SEP]`` starts sentence B (:mod:`bertdemo.explore.typed_pair`), ``[MASK]`` may be typed in
any case, and a mask glued to letters is filled with a ``##`` piece.
"""

from __future__ import annotations

import re

from bertdemo.explore.typed_pair import split_pair
from bertdemo.models.bert_family import FAMILY

STATIC_SEED_OFFSET = 1_000_003  # the masking lab's static copies: drawn once, from seed + this offset
POOLER_NOTE = ("# transformers may report pooler weights as 'newly initialized': a masked-LM checkpoint has no\n"
               "# trained pooler. Nothing printed here uses it, so the report is harmless.\n")
_MASK_ANY_CASE = re.compile(r"\[mask\]", re.IGNORECASE)

HEADER = "import torch\nfrom transformers import AutoTokenizer, {classes}\n\nMODEL = {model!r}\n"
LOAD = "tokenizer = AutoTokenizer.from_pretrained(MODEL)\nmodel = {cls}.from_pretrained(MODEL).eval()\n"


def preamble(model: str, *classes: str) -> str:
    return HEADER.format(classes=", ".join(classes), model=str(model))


def _pair(text: str, text_pair: str = "") -> str:
    """The tokenizer's text arguments as literals: ``'A'`` or ``'A', 'B'`` (a typed [SEP] starts B)."""
    first, second = split_pair(_MASK_ANY_CASE.sub("[MASK]", str(text)), _MASK_ANY_CASE.sub("[MASK]", str(text_pair or "")))
    return repr(first) + (f", {second!r}" if second else "")


def tokenizer_code(model: str, text: str, text_pair: str = "") -> str:
    """Tokenizer tab: the tokens, ids and segments."""
    return (
        "from transformers import AutoTokenizer\n\n"
        f"tokenizer = AutoTokenizer.from_pretrained({str(model)!r})\n"
        f"enc = tokenizer({_pair(text, text_pair)})  # a [SEP] typed in the text starts sentence B\n"
        'print(tokenizer.convert_ids_to_tokens(enc["input_ids"]))\n'
        'print(enc["input_ids"])\n'
        'print(enc["token_type_ids"])\n'
    )


def fill_mask_code(model: str, text: str, top_k: int = 5, text_pair: str = "") -> str:
    """Fill-Mask tab: the top-k words and probabilities at every [MASK], as the view filters them: a mask at
    a word start is never a ``##`` piece, a mask glued to letters is only ``##`` pieces, a mask glued to a
    previous mask may be any piece. A left-to-right checkpoint loads as ``AutoModelForCausalLM`` and answers a
    mask from the position before it."""
    first, second = split_pair(str(text), str(text_pair or ""))
    texts = (first,) if second is None else (first, second)
    return preamble(model, "AutoModelForMaskedLM", "AutoModelForCausalLM", "AutoConfig") + (
        "tokenizer = AutoTokenizer.from_pretrained(MODEL)\n"
        "left_to_right = AutoConfig.from_pretrained(MODEL).is_decoder  # a left-to-right run: BertLMHeadModel\n"
        "model = (AutoModelForCausalLM if left_to_right else AutoModelForMaskedLM).from_pretrained(MODEL).eval()\n"
        "import re\n"
        f"TEXTS = {texts!r}  # a [SEP] typed in the text starts sentence B\n"
        "texts = [re.sub(r'(?i)\\[mask\\]', tokenizer.mask_token, t) for t in TEXTS]  # [MASK] in any case\n"
        "inputs = tokenizer(*texts, return_tensors='pt', return_offsets_mapping=True)\n"
        "offsets = inputs.pop('offset_mapping')[0].tolist()\n"
        "with torch.inference_mode():\n"
        "    logits = model(**inputs).logits  # (1, S, V)\n"
        "pieces = torch.tensor([t.startswith('##') for t in tokenizer.convert_ids_to_tokens(range(logits.shape[-1]))])\n"
        "for pos in (inputs['input_ids'][0] == tokenizer.mask_token_id).nonzero().flatten().tolist():\n"
        "    at = pos - 1 if left_to_right else pos  # left-to-right: the output before the blank predicts it\n"
        "    probs = logits[0, at].softmax(-1)  # over the whole vocabulary\n"
        "    before = texts[inputs.sequence_ids(0)[pos]][:offsets[pos][0]]  # the text before this mask\n"
        "    if pieces.any() and not before.endswith(tokenizer.mask_token):  # after another mask: any piece\n"
        "        glued = before[-1:].isalnum()  # glued to letters: only ## pieces; at a word start: none\n"
        "        probs[~pieces if glued else pieces] = 0\n"
        f"    top = probs.topk({int(top_k)})\n"
        "    print([(tokenizer.convert_ids_to_tokens(int(i)), round(float(p), 4)) for p, i in zip(*top)])\n"
    )


def attention_code(model: str, text: str, text_pair: str = "", layer: int = 0, head: int = 0) -> str:
    """Attention tab: one head's attention weights (layer, head), rows = queries, columns = keys."""
    return preamble(model, "AutoModel") + POOLER_NOTE + (
        "tokenizer = AutoTokenizer.from_pretrained(MODEL)\n"
        "model = AutoModel.from_pretrained(MODEL, attn_implementation='eager').eval()\n"
        f"inputs = tokenizer({_pair(text, text_pair)}, return_tensors='pt')  # a typed [SEP] starts sentence B\n"
        "with torch.inference_mode():\n"
        "    attentions = model(**inputs, output_attentions=True).attentions  # L x (1, heads, S, S)\n"
        f"weights = attentions[{int(layer)}][0, {int(head)}]  # (S, S): layer {int(layer)}, head {int(head)}\n"
        "print(tokenizer.convert_ids_to_tokens(inputs['input_ids'][0]))\n"
        "print(weights.numpy().round(3))\n"
    )


def embeddings_code(model: str, text: str) -> str:
    """Inside BERT, embeddings: word + position + segment, LayerNorm = hidden_states[0]."""
    return preamble(model, "AutoModelForMaskedLM") + LOAD.format(cls="AutoModelForMaskedLM") + (
        f"inputs = tokenizer({_pair(text)}, return_tensors='pt')  # a typed [SEP] starts sentence B (segment 1)\n"
        "emb = model.bert.embeddings\n"
        "S = inputs['input_ids'].shape[1]\n"
        "with torch.inference_mode():\n"
        "    total = (emb.word_embeddings(inputs['input_ids'])            # (1, S, H)\n"
        "             + emb.position_embeddings(torch.arange(S))[None]\n"
        "             + emb.token_type_embeddings(inputs['token_type_ids']))\n"
        "    normed = emb.LayerNorm(total)\n"
        "    own = model(**inputs, output_hidden_states=True).hidden_states[0]\n"
        "print(normed[0, :, :4].numpy().round(4))  # first 4 of H numbers per token\n"
        "print('max |difference| from hidden_states[0]:', float((normed - own).abs().max()))\n"
    )


def layer_step_code(model: str, text: str, layer: int = 0, head: int = 0, query: int = 0) -> str:
    """Inside BERT, one layer: q·k / √d_h, softmax, for one head and one query token."""
    return preamble(model, "AutoModelForMaskedLM") + LOAD.format(cls="AutoModelForMaskedLM") + (
        f"inputs = tokenizer({_pair(text)}, return_tensors='pt')  # a typed [SEP] starts sentence B\n"
        f"LAYER, HEAD, QUERY = {int(layer)}, {int(head)}, {int(query)}\n"
        "with torch.inference_mode():\n"
        "    X = model(**inputs, output_hidden_states=True).hidden_states[LAYER][0]  # (S, H)\n"
        "    att = model.bert.encoder.layer[LAYER].attention.self\n"
        "    d = att.attention_head_size\n"
        "    q = att.query(X)[:, HEAD * d:(HEAD + 1) * d]  # (S, d_h)\n"
        "    k = att.key(X)[:, HEAD * d:(HEAD + 1) * d]\n"
        "    scores = q[QUERY] @ k.T / d ** 0.5  # (S,)\n"
        "print((scores.softmax(-1)).numpy().round(4))  # the query token's attention row\n"
    )


def mlm_loss_code(model: str, text: str, words: list[str]) -> str:
    """Inside BERT, the loss: −log p of the right word at each mask, their mean, the model's own loss.

    ``text`` holds the ``[MASK]``s, or is a plain sentence whose ``words`` the code masks itself."""
    hide = "" if "[mask]" in text.lower() else (
        "import re\n"
        "for word in WORDS:  # each word's first whole-word occurrence becomes [MASK]\n"
        "    text = re.sub(rf'(?<!\\w){re.escape(word)}(?!\\w)', tokenizer.mask_token, text, count=1, flags=re.I)\n"
    )
    split = ("a, _, b = text.partition('[SEP]')  # a typed [SEP] starts sentence B\n"
             "texts = [a.strip(), b.replace('[SEP]', ' ').strip()] if b.strip() else [a.strip()]\n"
             if "[SEP]" in str(text) else "texts = [text]\n")
    return preamble(model, "AutoModelForMaskedLM") + LOAD.format(cls="AutoModelForMaskedLM") + (
        f"text, WORDS = {str(text)!r}, {[str(w) for w in words]!r}\n" + hide + split +
        "inputs = tokenizer(*texts, return_tensors='pt')\n"
        "answers = tokenizer.convert_tokens_to_ids([w.lower() if getattr(tokenizer, 'do_lower_case', False) else w for w in WORDS])\n"
        "masks = inputs['input_ids'][0] == tokenizer.mask_token_id\n"
        "labels = torch.full_like(inputs['input_ids'], -100)  # -100: not predicted\n"
        "labels[0, masks] = torch.tensor(answers)\n"
        "with torch.inference_mode():\n"
        "    out = model(**inputs, labels=labels)\n"
        "log_p = out.logits[0, masks].log_softmax(-1)[range(len(answers)), answers]\n"
        "print('-log p per mask:', (-log_p).numpy().round(4))\n"
        "print('mean:', round(float(-log_p.mean()), 4), ' model loss:', round(float(out.loss), 4))\n"
    )


def inside_code(model: str, text: str, words: str = "", layer: int = 0, head: int = 0, query: int = 0) -> str:
    """Inside BERT tab: the embeddings, one layer's attention row and the loss, one after the other."""
    parts = ["# 1. Embeddings\n" + embeddings_code(model, text),
             "# 2. One layer, one head, one query token\n" + layer_step_code(model, text, layer, head, query)]
    answers = [w.strip() for w in (words or "").split(",") if w.strip()]
    if answers:
        parts.append("# 4. The masked-LM loss\n" + mlm_loss_code(model, text, answers))
    return "\n\n".join(parts)


def model_outputs_code(model: str, text: str) -> str:
    """Question 4: what BertForMaskedLM(**inputs) returns, with shapes, and what BertModel returns."""
    return preamble(model, "AutoModelForMaskedLM", "BertModel") + (
        "tokenizer = AutoTokenizer.from_pretrained(MODEL)\n"
        "# 'eager' attention: the fast default (sdpa) does not return the attention weights\n"
        "model = AutoModelForMaskedLM.from_pretrained(MODEL, attn_implementation='eager').eval()\n"
        f"inputs = tokenizer({_pair(text)}, return_tensors='pt')  # a typed [SEP] starts sentence B\n"
        "with torch.inference_mode():\n"
        "    out = model(**inputs, output_hidden_states=True, output_attentions=True)\n"
        "print('logits', tuple(out.logits.shape))  # (1, S, V)\n"
        "print('hidden_states', len(out.hidden_states), 'x', tuple(out.hidden_states[0].shape))  # L + 1\n"
        "print('attentions', len(out.attentions), 'x', tuple(out.attentions[0].shape))  # L x (1, heads, S, S)\n"
        "masks = (inputs['input_ids'][0] == tokenizer.mask_token_id).nonzero().flatten().tolist()\n"
        "if masks:\n"
        "    print('top word at the first [MASK]:', tokenizer.decode([int(out.logits[0, masks[0]].argmax())]))\n"
        + POOLER_NOTE +
        "encoder = BertModel.from_pretrained(MODEL)  # the encoder alone (+ a pooler)\n"
        "with torch.inference_mode():\n"
        "    enc_out = encoder(**inputs)\n"
        "print('last_hidden_state', tuple(enc_out.last_hidden_state.shape), "
        "' pooler_output', tuple(enc_out.pooler_output.shape))\n"
    )


ENGINE_TOKENIZER = "bert-base-uncased"  # the pretraining engine's vocabulary (the masking lab's tokenizer)


def _mask_function(mlm_probability: float, mask_replace_prob: float, random_replace_prob: float,
                   fixed_count: bool) -> str:
    """Source of ``mask(ids, g)``: the pretraining engine's masking, line for line, in plain torch (the same
    random draws in the same order, so the same seed gives the same masks)."""
    if fixed_count:
        choose = ("    k = max(1, round(P * (T - 2)))  # fixed count: exactly k of the T - 2 real tokens\n"
                  "    scores = torch.rand((B, T), generator=g).masked_fill(special, -1.0)\n"
                  "    top = scores.topk(k, dim=1)  # k random real positions per row\n"
                  "    chosen = torch.zeros((B, T), dtype=torch.bool).scatter_(1, top.indices, top.values >= 0)\n")
    else:
        choose = ("    coins = torch.full((B, T), P).masked_fill(special, 0.0)  # a coin flip per real token\n"
                  "    chosen = torch.bernoulli(coins, generator=g).bool()\n")
    return (
        f"P, MASK, RANDOM = {float(mlm_probability)!r}, {float(mask_replace_prob)!r}, {float(random_replace_prob)!r}\n"
        "SPECIAL = torch.tensor(sorted(set(tokenizer.all_special_ids)))\n\n"
        "def mask(ids, g):\n"
        "    \"\"\"(B, T) ids -> (masked ids, chosen, became [MASK], became a random token).\"\"\"\n"
        "    B, T = ids.shape\n"
        "    special = torch.isin(ids, SPECIAL)  # [CLS], [SEP]: never chosen\n"
        + choose +
        "    u = torch.rand((B, T), generator=g)  # one draw splits the chosen: [MASK] / random / kept\n"
        "    to_mask = chosen & (u < MASK)\n"
        "    to_random = chosen & (u >= MASK) & (u < MASK + RANDOM)\n"
        "    random_words = torch.randint(len(tokenizer), (B, T), generator=g, dtype=ids.dtype)\n"
        "    out = torch.where(to_mask, tokenizer.mask_token_id, ids)\n"
        "    return torch.where(to_random, random_words, out), chosen, to_mask, to_random\n\n"
    )


def masking_code(text: str, mlm_probability: float = 0.15, mask_replace_prob: float = 0.8,
                 random_replace_prob: float = 0.1, draws: int = 2000, seed: int = 0, fixed_count: bool = True,
                 whole_word: bool = False, tokenizer: str = ENGINE_TOKENIZER) -> str:
    """Masking lab, rates over many draws: the engine's masking of the sentence, ``draws`` copies at once,
    with the view's seed; prints the chosen fraction and the [MASK] / random / kept split the view shows."""
    note = ("# whole-word masking (pieces of a word chosen together) is not written out here: these lines\n"
            "# choose single tokens, as with the box unticked\n" if whole_word else "")
    return (
        "import torch\nfrom transformers import AutoTokenizer\n\n" + note +
        f"tokenizer = AutoTokenizer.from_pretrained({str(tokenizer)!r})  # bert-base-uncased's vocabulary\n"
        + _mask_function(mlm_probability, mask_replace_prob, random_replace_prob, fixed_count) +
        f"ids = torch.tensor([tokenizer({str(text)!r})['input_ids']] * {int(draws)})  # {int(draws)} copies\n"
        f"_, chosen, to_mask, to_random = mask(ids, torch.Generator().manual_seed({int(seed or 0)}))\n"
        "n, n_mask, n_random = int(chosen.sum()), int(to_mask.sum()), int(to_random.sum())\n"
        "print('chosen', round(n / int((~torch.isin(ids, SPECIAL)).sum()), 3),\n"
        "      '[MASK]', round(n_mask / n, 3), 'random', round(n_random / n, 3), 'kept', round((n - n_mask - n_random) / n, 3))\n"
    )


def epochs_code(text: str, epochs: int = 40, static_copies: int = 10, seed: int = 0, mlm_probability: float = 0.15,
                mask_replace_prob: float = 0.8, random_replace_prob: float = 0.1, fixed_count: bool = True,
                tokenizer: str = ENGINE_TOKENIZER) -> str:
    """Masking lab, static vs dynamic: how many distinct masks one sentence gets over ``epochs`` epochs — N
    copies masked once (the original BERT, the copies cycling) against a fresh mask each epoch."""
    return (
        "import torch\nfrom transformers import AutoTokenizer\n\n"
        f"tokenizer = AutoTokenizer.from_pretrained({str(tokenizer)!r})  # bert-base-uncased's vocabulary\n"
        + _mask_function(mlm_probability, mask_replace_prob, random_replace_prob, fixed_count) +
        f"ids = torch.tensor([tokenizer({str(text)!r})['input_ids']])  # (1, T)\n"
        f"EPOCHS, COPIES, SEED = {int(epochs)}, {int(static_copies)}, {int(seed)}\n"
        f"g = torch.Generator().manual_seed(SEED + {STATIC_SEED_OFFSET})  # static: written once, before training\n"
        "copies = [tuple(mask(ids, g)[0][0].tolist()) for _ in range(COPIES)]\n"
        "static = [copies[epoch % COPIES] for epoch in range(EPOCHS)]  # the copies come round again\n"
        "g = torch.Generator().manual_seed(SEED)  # dynamic: a fresh mask each time the sentence comes round\n"
        "dynamic = [tuple(mask(ids, g)[0][0].tolist()) for epoch in range(EPOCHS)]\n"
        "print('static:', len(set(static)), 'distinct masks; dynamic:', len(set(dynamic)))\n"
        "print('each static mask seen', EPOCHS / COPIES, 'times')  # one loop over epochs, none over masks\n"
    )


def order_code(model: str, text: str) -> str:
    """Learn, word order: the sentence shuffled (specials in place), final states compared token by token —
    with position embeddings, then with them zeroed (a bag of words: the same states)."""
    return preamble(model, "AutoModelForMaskedLM") + LOAD.format(cls="AutoModelForMaskedLM") + (
        "import numpy as np\n"
        f"inputs = tokenizer({_pair(text)}, return_tensors='pt', return_special_tokens_mask=True)\n"
        "special = inputs.pop('special_tokens_mask')[0].bool().tolist()  # [CLS], [SEP] stay in place\n"
        "inner = [i for i, s in enumerate(special) if not s]\n"
        "order = [inner[i] for i in np.random.default_rng(0).permutation(len(inner))]\n"
        "if order == inner:\n"
        "    order = order[1:] + order[:1]\n"
        "perm = list(range(len(special)))\n"
        "for slot, source in zip(inner, order):\n"
        "    perm[slot] = source\n"
        "shuffled = {k: v[:, perm] for k, v in inputs.items()}\n"
        "back = torch.argsort(torch.tensor(perm))  # token i of the shuffled copy is token perm[i]\n"
        "print(tokenizer.convert_ids_to_tokens(shuffled['input_ids'][0]))\n"
        "with torch.inference_mode():\n"
        "    for label in ('with positions', 'positions zeroed'):\n"
        "        if label == 'positions zeroed':\n"
        "            model.bert.embeddings.position_embeddings.weight.zero_()\n"
        "        a = model.bert(**inputs).last_hidden_state[0]\n"
        "        b = model.bert(**shuffled).last_hidden_state[0][back]\n"
        "        print(label, 'mean cosine', round(float(torch.cosine_similarity(a, b, dim=-1).mean()), 3))\n"
    )


def schedule_code(schedule: list[tuple[int, int]], total_steps: int) -> str:
    """Learn, 128 → 512: the block-length schedule's phases, the attention cost of a long block, and the
    training loop that switches the block length at each phase."""
    phases = [(int(start), int(length)) for start, length in schedule]
    short, long_ = phases[0][1], phases[-1][1]
    return (
        f"TOTAL_STEPS = {int(total_steps)}\n"
        f"PHASES = {phases!r}  # (first step, block length): 90 % of the steps short, the rest long\n"
        "for (start, length), nxt in zip(PHASES, PHASES[1:] + [(TOTAL_STEPS, None)]):\n"
        "    print(f'{length}-token blocks: steps {start:,} to {nxt[0] - 1:,}')\n"
        f"print('attention scores per head and layer, {long_} vs {short}:', ({long_} / {short}) ** 2, 'x')\n\n"
        "def block_length(step):\n"
        "    return [length for start, length in PHASES if start <= step][-1]\n\n"
        "print('block length at each phase start:', [block_length(start) for start, _ in PHASES])\n"
        "# in the training loop (the Pretrain tab's code shows one step):\n"
        "# batch = collator([tokenizer(t, truncation=True, max_length=block_length(step)) for t in texts])\n"
        "# position rows past the short length get gradient only once block_length(step) is long\n"
    )


def nsp_code(model: str, sentence_a: str, sentence_b: str) -> str:
    """Masking & NSP tab: P(IsNext) from a checkpoint trained with next-sentence prediction."""
    return preamble(model, "BertForNextSentencePrediction") + LOAD.format(cls="BertForNextSentencePrediction") + (
        f"inputs = tokenizer({sentence_a!r}, {sentence_b!r}, return_tensors='pt')  # [CLS] A [SEP] B [SEP]\n"
        "with torch.inference_mode():\n"
        "    logits = model(**inputs).logits  # (1, 2): IsNext, NotNext\n"
        "print('P(IsNext) =', round(float(logits.softmax(-1)[0, 0]), 4))\n"
    )


def family_code(size: str = "bert-base") -> str:
    """Question 6: a family member's parameter count, counted on the meta device (nothing allocated)."""
    layers, hidden, heads, ffn = FAMILY[size]
    return (
        "import torch\nfrom transformers import BertConfig, BertForMaskedLM\n\n"
        f"config = BertConfig(num_hidden_layers={layers}, hidden_size={hidden}, num_attention_heads={heads}, "
        f"intermediate_size={ffn})  # {size}\n"
        "with torch.device('meta'):  # shapes only: no memory for the weights\n"
        "    model = BertForMaskedLM(config)\n"
        "print(f'{model.num_parameters():,}')  # tied decoder counted once\n"
    )


def pretrain_code(layers: int = 2, hidden: int = 128, heads: int = 2, ffn: int = 512, seq_len: int = 128,
                  position_embeddings: bool = True, tokenizer: str = "bert-base-uncased") -> str:
    """Pretrain tab: one masked-LM training step of a new BERT of this shape, in stock transformers."""
    no_pos = ("model.bert.embeddings.position_embeddings.weight.data.zero_()\n"
              "model.bert.embeddings.position_embeddings.weight.requires_grad_(False)  # order-blind\n"
              if not position_embeddings else "")
    return (
        "import torch\nfrom transformers import AutoTokenizer, BertConfig, BertForMaskedLM, "
        "DataCollatorForLanguageModeling\n\n"
        f"tokenizer = AutoTokenizer.from_pretrained({str(tokenizer)!r})  # bert-base-uncased's vocabulary\n"
        f"config = BertConfig(num_hidden_layers={int(layers)}, hidden_size={int(hidden)}, "
        f"num_attention_heads={int(heads)}, intermediate_size={int(ffn)})\n"
        "model = BertForMaskedLM(config)\n" + no_pos +
        "collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15)\n"
        "optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)\n"
        f"texts = ['The cat sat on the mat.', 'Paris is the capital of France.']  # your corpus, {int(seq_len)}-token blocks\n"
        f"batch = collator([tokenizer(t, truncation=True, max_length={int(seq_len)}) for t in texts])\n"
        "loss = model(**batch).loss  # cross-entropy at the chosen positions only\n"
        "loss.backward(); optimizer.step(); optimizer.zero_grad()\n"
        "print(f'{model.num_parameters():,} parameters, loss {loss.item():.3f}')\n"
    )


def pretrain_code_for(preset: str, layers: int, hidden: int, heads: int, ffn: int,
                      position_embeddings: bool = True, tokenizer: str = "bert-base-uncased") -> str:
    """The Pretrain form's model (a preset, or its custom shape) as :func:`pretrain_code`."""
    shape = FAMILY.get(preset, (layers, hidden, heads, ffn))
    return pretrain_code(*(int(v) for v in shape), position_embeddings=bool(position_embeddings), tokenizer=tokenizer)


def fill_mask_pair_code(model: str, sentences: list[str], top_k: int = 5) -> str:
    """Learn tab, what the model learned about people: Fill-Mask's top-k (the same filter) for each sentence."""
    body = fill_mask_code(model, sentences[0], top_k)
    head, _, rest = body.partition("TEXTS = ")
    loop = "".join("    " + line + "\n" for line in rest.split("\n", 1)[1].splitlines())
    return (head + f"SENTENCES = {list(sentences)!r}\n" + "for TEXTS in [(s,) for s in SENTENCES]:\n"
            + "    print(TEXTS[0])\n" + loop)


def below_line_code(limit_s: float = 120.0, line: str = "left") -> str:
    """Learn tab, the live-run question: a run's metrics CSV (the Pretrain tab's download) graded as the page does."""
    return (
        "import csv\n\n"
        f"LIMIT_S = {float(limit_s):g}  # seconds of training\n"
        "rows = list(csv.DictReader(open('metrics.csv')))  # Pretrain tab: Runs on this server → download\n"
        f"evals = [(float(r['wall_s']), float(r['eval_loss']), float(r['landmark_{line}'])) for r in rows if r['eval_loss']]\n"
        "below = [s for s, loss, line in evals if s <= LIMIT_S and loss < line]\n"
        "trained = max(float(r['wall_s']) for r in rows if r['wall_s'])\n"
        "if below:\n"
        "    print(f'yes: below the word-before line at {below[0]:.0f} s')\n"
        "elif trained >= LIMIT_S:\n"
        "    print('no: not below the word-before line within', LIMIT_S, 's')\n"
        "else:\n"
        "    print(f'not decided yet: {trained:.0f} s of training so far')\n"
    )
