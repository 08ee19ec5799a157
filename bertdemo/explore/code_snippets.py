""""Show the code": the few lines of transformers / torch that reproduce a view's numbers in a notebook.

Each function returns Python source filled with the learner's own inputs and the model's name (as
Python literals, so any text is safe to paste). The snippets use stock transformers only — no
bertdemo — and print the numbers the view shows; tests run every one on a tiny model and compare.
Torch-free (plain strings): the page fills them without loading anything.
"""

from __future__ import annotations

from bertdemo.models.bert_family import FAMILY

HEADER = "import torch\nfrom transformers import AutoTokenizer, {classes}\n\nMODEL = {model!r}\n"
LOAD = "tokenizer = AutoTokenizer.from_pretrained(MODEL)\nmodel = {cls}.from_pretrained(MODEL).eval()\n"


def _head(model: str, *classes: str) -> str:
    return HEADER.format(classes=", ".join(classes), model=model)


def tokenizer_code(model: str, text: str, text_pair: str = "") -> str:
    """Tokenizer tab: the tokens, ids and segments."""
    pair = f", {text_pair!r}" if text_pair else ""
    return (
        "from transformers import AutoTokenizer\n\n"
        f"tokenizer = AutoTokenizer.from_pretrained({model!r})\n"
        f"enc = tokenizer({text!r}{pair})\n"
        'print(tokenizer.convert_ids_to_tokens(enc["input_ids"]))\n'
        'print(enc["input_ids"])\n'
        'print(enc["token_type_ids"])\n'
    )


def fill_mask_code(model: str, text: str, top_k: int = 5) -> str:
    """Fill-Mask tab: the top-k words and probabilities at every [MASK] that starts a word."""
    return _head(model, "AutoModelForMaskedLM") + LOAD.format(cls="AutoModelForMaskedLM") + (
        f"inputs = tokenizer({text!r}, return_tensors='pt')\n"
        "with torch.inference_mode():\n"
        "    logits = model(**inputs).logits  # (1, S, V)\n"
        "pieces = torch.tensor([t.startswith('##') for t in tokenizer.convert_ids_to_tokens(range(logits.shape[-1]))])\n"
        "for pos in (inputs['input_ids'][0] == tokenizer.mask_token_id).nonzero().flatten().tolist():\n"
        "    probs = logits[0, pos].softmax(-1)  # over the whole vocabulary\n"
        "    probs[pieces] = 0  # a mask that starts a word is never a ## piece\n"
        f"    top = probs.topk({int(top_k)})\n"
        "    print([(tokenizer.convert_ids_to_tokens(int(i)), round(float(p), 4)) for p, i in zip(*top)])\n"
    )


def attention_code(model: str, text: str, text_pair: str = "", layer: int = 0, head: int = 0) -> str:
    """Attention tab: one head's attention weights (layer, head), rows = queries, columns = keys."""
    pair = f", {text_pair!r}" if text_pair else ""
    return _head(model, "AutoModel") + (
        "tokenizer = AutoTokenizer.from_pretrained(MODEL)\n"
        "model = AutoModel.from_pretrained(MODEL, attn_implementation='eager').eval()\n"
        f"inputs = tokenizer({text!r}{pair}, return_tensors='pt')\n"
        "with torch.inference_mode():\n"
        "    attentions = model(**inputs, output_attentions=True).attentions  # L x (1, heads, S, S)\n"
        f"weights = attentions[{int(layer)}][0, {int(head)}]  # (S, S): layer {int(layer)}, head {int(head)}\n"
        "print(tokenizer.convert_ids_to_tokens(inputs['input_ids'][0]))\n"
        "print(weights.numpy().round(3))\n"
    )


def embeddings_code(model: str, text: str) -> str:
    """Inside BERT, embeddings: word + position + segment, LayerNorm = hidden_states[0]."""
    return _head(model, "AutoModelForMaskedLM") + LOAD.format(cls="AutoModelForMaskedLM") + (
        f"inputs = tokenizer({text!r}, return_tensors='pt')\n"
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
    return _head(model, "AutoModelForMaskedLM") + LOAD.format(cls="AutoModelForMaskedLM") + (
        f"inputs = tokenizer({text!r}, return_tensors='pt')\n"
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
    return _head(model, "AutoModelForMaskedLM") + LOAD.format(cls="AutoModelForMaskedLM") + (
        f"text, WORDS = {text!r}, {list(words)!r}\n" + hide +
        "inputs = tokenizer(text, return_tensors='pt')\n"
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
    return _head(model, "AutoModelForMaskedLM", "BertModel") + (
        "tokenizer = AutoTokenizer.from_pretrained(MODEL)\n"
        "# 'eager' attention: the fast default (sdpa) does not return the attention weights\n"
        "model = AutoModelForMaskedLM.from_pretrained(MODEL, attn_implementation='eager').eval()\n"
        f"inputs = tokenizer({text!r}, return_tensors='pt')\n"
        "with torch.inference_mode():\n"
        "    out = model(**inputs, output_hidden_states=True, output_attentions=True)\n"
        "print('logits', tuple(out.logits.shape))  # (1, S, V)\n"
        "print('hidden_states', len(out.hidden_states), 'x', tuple(out.hidden_states[0].shape))  # L + 1\n"
        "print('attentions', len(out.attentions), 'x', tuple(out.attentions[0].shape))  # L x (1, heads, S, S)\n"
        "masks = (inputs['input_ids'][0] == tokenizer.mask_token_id).nonzero().flatten().tolist()\n"
        "if masks:\n"
        "    print('top word at the first [MASK]:', tokenizer.decode([int(out.logits[0, masks[0]].argmax())]))\n"
        "encoder = BertModel.from_pretrained(MODEL)  # the encoder alone (+ a pooler)\n"
        "with torch.inference_mode():\n"
        "    enc_out = encoder(**inputs)\n"
        "print('last_hidden_state', tuple(enc_out.last_hidden_state.shape), "
        "' pooler_output', tuple(enc_out.pooler_output.shape))\n"
    )


def masking_code(text: str, mlm_probability: float = 0.15, mask_replace_prob: float = 0.8,
                 random_replace_prob: float = 0.1, draws: int = 2000, model: str = "bert-base-uncased") -> str:
    """Masking lab, rates: transformers' own collator on the sentence, many draws; the 80/10/10 split."""
    return (
        "import torch\nfrom transformers import AutoTokenizer, DataCollatorForLanguageModeling\n\n"
        f"tokenizer = AutoTokenizer.from_pretrained({model!r})\n"
        f"collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability={float(mlm_probability)!r},\n"
        f"    mask_replace_prob={float(mask_replace_prob)!r}, random_replace_prob={float(random_replace_prob)!r})\n"
        f"ids = tokenizer({text!r})['input_ids']\n"
        "torch.manual_seed(0)\n"
        f"batch = collator([{{'input_ids': ids}}] * {int(draws)})  # {int(draws)} draws of the same sentence\n"
        "chosen = batch['labels'] != -100\n"
        "original = torch.tensor(ids).expand_as(chosen)\n"
        "masked = chosen & (batch['input_ids'] == tokenizer.mask_token_id)\n"
        "kept = chosen & (batch['input_ids'] == original)\n"
        "n = chosen.sum()\n"
        "print('chosen', round(float(n / (chosen.numel() - 2 * len(chosen))), 3),\n"
        "      '[MASK]', round(float(masked.sum() / n), 3), 'random', round(float((n - masked.sum() - kept.sum()) / n), 3),\n"
        "      'kept', round(float(kept.sum() / n), 3))\n"
    )


def nsp_code(model: str, sentence_a: str, sentence_b: str) -> str:
    """Masking & NSP tab: P(IsNext) from a checkpoint trained with next-sentence prediction."""
    return _head(model, "BertForNextSentencePrediction") + LOAD.format(cls="BertForNextSentencePrediction") + (
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
                  position_embeddings: bool = True) -> str:
    """Pretrain tab: one masked-LM training step of a new BERT of this shape, in stock transformers."""
    no_pos = ("model.bert.embeddings.position_embeddings.weight.data.zero_()\n"
              "model.bert.embeddings.position_embeddings.weight.requires_grad_(False)  # order-blind\n"
              if not position_embeddings else "")
    return (
        "import torch\nfrom transformers import AutoTokenizer, BertConfig, BertForMaskedLM, "
        "DataCollatorForLanguageModeling\n\n"
        "tokenizer = AutoTokenizer.from_pretrained('bert-base-uncased')\n"
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
                      position_embeddings: bool = True) -> str:
    """The Pretrain form's model (a preset, or its custom shape) as :func:`pretrain_code`."""
    shape = FAMILY.get(preset, (layers, hidden, heads, ffn))
    return pretrain_code(*(int(v) for v in shape), position_embeddings=bool(position_embeddings))
