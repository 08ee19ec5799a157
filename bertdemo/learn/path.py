"""The learning path's answers: each step's question answered live, on the current model and the
learner's sentence, by the same functions the tabs use (nothing is computed a second way here).

``answer(loaded, step, text)`` returns a :class:`LearnAnswer`: the answer in words with its live
numbers, those numbers as plain values (what the API returns and the tests check against the
model), the code that reproduces them in a notebook, and the tab (with the sentence it gets) where
the learner keeps exploring. Steps that need a ``[MASK]`` hide one word of the sentence themselves.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from bertdemo.explore import inside, inside_layer, inside_output, masking_lab, model_outputs, nsp, order_probe
from bertdemo.explore.encoding import chosen_words, without_brackets, word_pieces
from bertdemo.explore.fill_mask import predict
from bertdemo.learn import predictions
from bertdemo.learn.names_step import names_step
from bertdemo.learn.steps import LearnStep, step as find_step
from bertdemo.locks import tokenize
from bertdemo.models import bert_family
from bertdemo.models.store import LoadedModel
from bertdemo.pretrain.config import PRESETS, param_count_of_model, parse_seq_len_schedule
from bertdemo.request_budget import WorkBudget
from bertdemo.snippets import views as code
from bertdemo.viz.masking import static_arithmetic_html, times_each_mask_seen
from bertdemo.viz.text import html_code as shown, literal

NSP_LENGTH, NSP_PAIRS, NSP_SEED = 64, 4, 1  # the Masking tab's default pairs: two IsNext, two NotNext
RATE_DRAWS = 2000  # the 80/10/10 step's draws of the sentence's mask
EPOCHS, STATIC_COPIES = 40, 10  # the original BERT: about 40 epochs over 10 masked copies
LENGTH_SCHEDULE, SCHEDULE_STEPS = "128:0.9,512:0.1", 1_000_000  # BERT: 90% of 1M steps at 128, the rest at 512


@dataclass
class LearnAnswer:
    step: str
    question: str
    model_name: str  # the model the request loaded (what a class asks the step again on)
    text: str  # the learner's sentence
    answer: str  # Markdown: the answer with its live numbers
    numbers: dict = field(default_factory=dict)  # those numbers, plain values
    code: str = ""  # what reproduces them in a notebook
    tab: str = ""  # where to keep exploring (a tab id)
    tab_label: str = ""
    tab_text: str = ""  # the sentence that tab gets
    tab_words: str = ""  # and the word hidden in it, where the tab asks for the right words (Inside BERT)
    prediction: dict = field(default_factory=dict)  # the question asked before the answer, its truth from numbers
    answered_by: str = ""  # the model(s) that answered, as the page names them: the step's own pair for why-b

    def to_json(self) -> dict:
        return dict(self.__dict__)


HIDEABLE = re.compile(r"(?<![\w#])[A-Za-z]{3,}(?!\w)")  # a word the steps may hide themselves: 3+ letters, whole


def words_after(text: str) -> int:
    """How many words ``text`` (what follows a blank) holds."""
    return len(re.findall(r"[A-Za-z0-9']+", text))


TYPED_MASK = ("Type a plain sentence, without [MASK]: the steps hide a word of it themselves. To choose the word, put it "
              "in square brackets: The [dog] barked all night.")


def _chosen(text: str) -> re.Match | None:
    """The learner's bracketed word in ``text`` (None: no choice); refused: a typed [MASK], two choices."""
    if "[mask]" in text.lower():
        raise ValueError(TYPED_MASK)
    marks = chosen_words(text)
    if len(marks) > 1:
        raise ValueError(f"Put only one word in square brackets, the one to hide; this sentence has {len(marks)}: "
                         + ", ".join(m.group(0) for m in marks[:4]) + ("…" if len(marks) > 4 else "") + ".")
    return marks[0] if marks else None


def hide_word(tokenizer, text: str, vocabulary: str = "This model's vocabulary") -> tuple[str, str]:
    """(the sentence with a word as [MASK], that word): the word the learner put in square brackets, else its last
    one-piece word of 3+ letters. ``vocabulary`` names ``tokenizer``'s in a refusal."""
    chosen = _chosen(text)
    if chosen is not None:
        word = chosen.group(1)
        pieces = word_pieces(tokenizer, word)
        if len(pieces) != 1 or tokenizer.convert_tokens_to_ids(pieces[0]) == tokenizer.unk_token_id:
            if len(pieces) == 1:  # one piece, but the unknown one
                raise ValueError(f"{vocabulary} does not hold \"{word}\": choose another word to hide.")
            raise ValueError(f"{vocabulary} holds \"{word}\" as {len(pieces)} pieces ({' '.join(pieces)}), and one "
                             "[MASK] hides one: choose a word it holds whole.")
        return without_brackets(text[: chosen.start()]) + "[MASK]" + without_brackets(text[chosen.end():]), pieces[0]
    for m in reversed(list(HIDEABLE.finditer(text))):
        word = m.group(0)
        pieces = word_pieces(tokenizer, word)
        if len(pieces) == 1 and tokenizer.convert_tokens_to_ids(pieces[0]) != tokenizer.unk_token_id:
            return text[: m.start()] + "[MASK]" + text[m.end():], pieces[0]
    raise ValueError("The sentence needs a word of three letters or more that the vocabulary holds whole, to hide.")


def _ids_preview(tokens: list[str], values: list, limit: int = 16) -> str:
    pairs = [f"{shown(t)} {v}" for t, v in zip(tokens, values)]
    return " · ".join(pairs[:limit]) + (" …" if len(pairs) > limit else "")


def _embeddings(loaded: LoadedModel, text: str, model_ref: str) -> tuple[str, dict, str]:
    r = inside.embeddings(loaded, text)
    s, d = r.shape
    md = (
        f"Your sentence is **{s} tokens** (with `[CLS]` and `[SEP]`): {_ids_preview(r.tokens, r.input_ids)}.  \n"
        f"Each token gets one vector of H = {d}: **word** embedding (row of its id) + **position** embedding "
        f"(row 0 … {s - 1}) + **segment** embedding (segment ids {sorted(set(r.token_type_ids))}; a typed `[SEP]` "
        f"starts sentence B, segment 1), then LayerNorm. The result is `hidden_states[0]`, shape (1, {s}, {d}).  \n"
        f"Recomputed from the weights: largest difference from the model's own `hidden_states[0]` = "
        f"**{r.max_abs_diff:.1e}**."
    )
    nums = {"tokens": r.tokens, "input_ids": r.input_ids, "token_type_ids": r.token_type_ids, "hidden_size": d,
            "max_abs_diff": r.max_abs_diff}
    return md, nums, code.embeddings_code(model_ref, text)


def _order(loaded: LoadedModel, text: str, model_ref: str) -> tuple[str, dict, str]:
    o = inside.embeddings(loaded, text).order
    with_pos = sum(o.cosine_with_positions) / len(o.cosine_with_positions)
    without = sum(o.cosine_without_positions) / len(o.cosine_without_positions)
    md = (
        "Self-attention treats its input as a **set**: only the **position embeddings** tell BERT where a token "
        f"stands. The experiment, on your sentence shuffled ({shown(' '.join(o.shuffled_tokens))}):  \n"
        f"- **with** position embeddings, each token's final hidden state changes: mean cosine original vs shuffled "
        f"= **{with_pos:.3f}** (largest difference {o.max_diff_with_positions:.3g});  \n"
        f"- **without** them (zeroed), the encoder gets the same bag of vectors: cosine **{without:.3f}**, largest "
        f"difference {o.max_diff_without_positions:.1e} — word order is invisible."
    )
    nums = {"shuffled_tokens": o.shuffled_tokens, "mean_cosine_with_positions": with_pos,
            "mean_cosine_without_positions": without, "max_diff_without_positions": o.max_diff_without_positions}
    return md, nums, code.order_code(model_ref, text)


def _attention(loaded: LoadedModel, text: str, model_ref: str) -> tuple[str, dict, str]:
    query = 1  # the first word's token, right after [CLS]
    r = inside_layer.layer_step(loaded, text, layer=0, head=0, query=query)
    top = int(r.probs.argmax())
    row = " · ".join(f"{shown(t)} {p:.2f}" for t, p in zip(r.tokens, r.probs))
    md = (
        f"Layer 0, head 0, query token {shown(r.tokens[query])} (position {query}). Each token's hidden state X "
        f"(H = {r.hidden_size}) gives q = X·W_Q, k = X·W_K, v = X·W_V, each split into {r.num_heads} heads of "
        f"d_h = {r.head_dim}. The scores q·k_j are divided by √{r.head_dim} = {r.head_dim ** 0.5:.3f}, and a "
        f"softmax over the {len(r.tokens)} tokens gives the attention row:  \n{row}  \n"
        f"{shown(r.tokens[query])} looks most at **{shown(r.tokens[top])}** (p = **{float(r.probs[top]):.3f}**); the output "
        f"is Σ p_j·v_j. The same weights as the model's own `output_attentions` (largest difference "
        f"{r.max_diff_attention:.1e})."
    )
    nums = {"tokens": r.tokens, "query": query, "probs": [float(p) for p in r.probs], "top_token": r.tokens[top],
            "top_position": top,
            "top_prob": float(r.probs[top]), "head_dim": r.head_dim}
    return md, nums, code.layer_step_code(model_ref, text, 0, 0, query)


def _outputs(loaded: LoadedModel, text: str, model_ref: str) -> tuple[str, dict, str]:
    masked, word = hide_word(loaded.tokenizer, text)
    r = model_outputs.model_outputs(loaded, masked)
    n_layers = len(r.attentions)
    pooler = ("this checkpoint has the pooler's weights" if r.pooler_in_checkpoint else
              "this checkpoint has **no** pooler weights: `BertModel.from_pretrained` would initialise them at random")
    md = (
        f"On {shown(masked)} (the word *{literal(word)}* hidden), `BertForMaskedLM(**inputs, output_hidden_states=True, "
        f"output_attentions=True)` returns:  \n"
        f"- `logits` **{r.logits}** = (batch, S tokens, V vocabulary): a score per word at every position;  \n"
        f"- `hidden_states`: **{len(r.hidden_states)} × {r.hidden_states[0]}** — the embeddings, then each of the "
        f"{n_layers} layers;  \n"
        f"- `attentions`: **{n_layers} × {r.attentions[0]}** — (batch, heads, query, key) per layer.  \n"
        f"At the `[MASK]` the top word is **{literal(r.top_token)}** (p = {r.top_prob:.3f}).  \n"
        f"`BertModel` (the encoder alone) returns `last_hidden_state` **{r.last_hidden_state}** and "
        f"`pooler_output` **{r.pooler_output}** = tanh(W·h_[CLS] + b); {pooler}."
    )
    nums = r.to_json() | {"masked_text": masked, "hidden_word": word,
                          "fill_mask_top": [c.token for c in predict(loaded, masked, top_k=5).masks[0].candidates]}
    return md, nums, code.model_outputs_code(model_ref, masked)


def _loss(loaded: LoadedModel, text: str, model_ref: str) -> tuple[str, dict, str]:
    masked, word = hide_word(loaded.tokenizer, text)
    r = inside_output.mlm_loss(loaded, masked, [word])
    m = r.masks[0]
    md = (
        f"Hide *{literal(word)}* → {shown(masked)}  \nAt the mask the head turns the final hidden state into V = {r.vocab_size:,} "
        f"logits; softmax gives p(*{literal(word)}*) = **{m.prob:.4f}** (rank {m.rank}), so the loss there is −log p = "
        f"**{m.neg_log_prob:.4f}**. The masked-LM loss is the mean of −log p over the masks (here one): "
        f"**{r.mean_loss:.4f}**; the model's own `loss` with `labels=` (−100 everywhere but the mask) is "
        f"**{r.model_loss:.4f}**. A uniform guess would score ln V = {r.uniform_loss:.2f}."
    )
    nums = {"masked_text": masked, "word": word, "prob": m.prob, "neg_log_prob": m.neg_log_prob, "rank": m.rank,
            "mean_loss": r.mean_loss, "model_loss": r.model_loss}
    return md, nums, code.mlm_loss_code(model_ref, masked, [word])


def _rates(loaded: LoadedModel, text: str, model_ref: str, tokenizer_ref: str = code.ENGINE_TOKENIZER
           ) -> tuple[str, dict, str]:
    settings = masking_lab.MaskSettings()
    r = masking_lab.measure_rates(text, settings, RATE_DRAWS)
    rate = {x.name: x for x in r.rates}
    k = max(1, round(settings.mlm_probability * r.n_counted))  # the engine's: of every token between [CLS] and [SEP]
    counted = "" if r.n_counted == r.n_tokens else f" (k counts all {r.n_counted} tokens, an [UNK] too, never chosen)"
    md = (
        f"Your sentence masked **{r.draws:,} times** by the pretraining engine's own code: of its {r.n_tokens} "
        f"tokens, {rate['chosen'].measured:.1%} are *chosen* for prediction — not exactly 15 %, because the engine "
        f"chooses a fixed count per sentence, k = round({settings.mlm_probability:g} × {r.n_counted}) = {k}{counted}, "
        f"and {min(k, r.n_tokens)} of {r.n_tokens} is {min(k, r.n_tokens) / r.n_tokens:.1%}; of the chosen, "
        f"**{rate['[MASK]'].measured:.1%}** became `[MASK]`, **{rate['random'].measured:.1%}** a random token and "
        f"**{rate['kept'].measured:.1%}** stayed (settings 80/10/10). Why not always `[MASK]`? `[MASK]` never "
        "appears when the model is used later; replacing some chosen tokens by random words or leaving them "
        "forces the model to check *every* token against its context, not only the masked ones."
    )
    nums = {x.name: x.measured for x in r.rates} | {"draws": r.draws, "n_tokens": r.n_tokens}
    return md, nums, code.masking_code(text, draws=RATE_DRAWS, seed=settings.seed, tokenizer=tokenizer_ref)


def _masks(loaded: LoadedModel, text: str, model_ref: str, tokenizer_ref: str = code.ENGINE_TOKENIZER
           ) -> tuple[str, dict, str]:
    settings = masking_lab.MaskSettings()
    c = masking_lab.compare_epochs(text, settings, EPOCHS, STATIC_COPIES)
    md = (
        f"Over {EPOCHS} epochs your sentence gets **{c.distinct_static} distinct masks** with static masking "
        f"({STATIC_COPIES} copies written once) and **{c.distinct_dynamic}** with dynamic masking (a fresh mask "
        "each time).  \n" + static_arithmetic_html(STATIC_COPIES, EPOCHS)
    )
    nums = {"distinct_static": c.distinct_static, "distinct_dynamic": c.distinct_dynamic,
            "times_each_mask_seen": times_each_mask_seen(STATIC_COPIES, EPOCHS)}
    return md, nums, code.epochs_code(text, EPOCHS, STATIC_COPIES, settings.seed, tokenizer=tokenizer_ref)


def _nsp(loaded: LoadedModel, text: str, model_ref: str) -> tuple[str, dict, str]:
    pairs = nsp.build_pairs("", NSP_LENGTH, NSP_PAIRS, NSP_SEED).pairs
    p = next(x for x in pairs if x.label_name == "IsNext")
    other = next(x for x in pairs if x.label_name == "NotNext")
    pred = nsp.predict_is_next(loaded, p.sentence_a, p.sentence_b)
    verdict = (f"**{pred.message}** for this pair." if pred.available else
               f"⚠️ {pred.message}")
    md = (
        "BERT's pairs are **whole sentences**: A is one or more sentences of a document; B is what follows "
        "(IsNext) or, half the time, sentences from another document (NotNext). From the embedded corpus, an "
        f"**IsNext** pair:  \n> **A:** {literal(p.sentence_a)}  \n> **B:** {literal(p.sentence_b)}  \n"
        f"and a **NotNext** pair (B from another article):  \n> **A:** {literal(other.sentence_a)}  \n"
        f"> **B:** {literal(other.sentence_b)}  \n"
        f"`[CLS] A [SEP] B [SEP]` = {len(p.tokens)} tokens, segment 0 for A, 1 for B.  \n"
        "P(IsNext) needs a checkpoint **trained with NSP** (`BertForPreTraining`): " + verdict
    )
    nums = {"label": p.label_name, "sentence_a": p.sentence_a, "sentence_b": p.sentence_b,
            "nsp_available": pred.available, "p_is_next": pred.p_is_next}
    return md, nums, code.nsp_code(model_ref, p.sentence_a, p.sentence_b)


def _family(loaded: LoadedModel, text: str, model_ref: str) -> tuple[str, dict, str]:
    members = bert_family.family()
    own = param_count_of_model(loaded.model)
    cfg = loaded.model.config
    by_formula = None
    if getattr(cfg, "model_type", "") == "bert":
        parts = bert_family.components(cfg.num_hidden_layers, cfg.hidden_size, cfg.intermediate_size,
                                       cfg.vocab_size, cfg.max_position_embeddings, cfg.type_vocab_size,
                                       tied=bool(getattr(cfg, "tie_word_embeddings", True)))
        by_formula = sum(c.count for c in parts)
    base, large = bert_family.member("bert-base"), bert_family.member("bert-large")
    check = (f"by the same formula **{by_formula:,}** — " + ("equal." if by_formula == own else "they differ!")
             if by_formula is not None else "(not a BERT: the formula does not apply).")
    md = (
        f"**bert-base: {base.masked_lm:,}** parameters as `BertForMaskedLM`; **bert-large: {large.masked_lm:,}** "
        f"({large.masked_lm / base.masked_lm:.1f}×). Most of the difference is in the layers: L·(4·(H² + H) + "
        "2·H·F + F + H + 4·H) grows with H², and large has twice the layers. The model in use, "
        f"{literal(loaded.name)}, counted from its weights: **{own:,}**; {check}\n\n" + bert_family.family_markdown(members)
    )
    nums = {m.name: m.masked_lm for m in members} | {"model": own, "model_by_formula": by_formula}
    return md, nums, code.family_code("bert-base")


def _no_positions(loaded: LoadedModel, text: str, model_ref: str, tokenizer_ref: str = code.ENGINE_TOKENIZER
                  ) -> tuple[str, dict, str]:
    masked, _word = hide_word(loaded.tokenizer, text)
    r = order_probe.order_probe(loaded, masked)
    first, second = r.original.masks[0].candidates[0], r.shuffled_result.masks[0].candidates[0]
    md = (
        "The Pretrain tab runs the experiment (*no position embeddings*: zeroed and frozen). Its loss comes out "
        "about the same — often slightly **lower** — because predicting a masked word gets far on the *bag* of "
        "words around it (which words, not their order), and a model without positions spends nothing on order. "
        "The difference shows in an **order probe**: the same sentence shuffled. The model in use, on your "
        f"sentence:  \n- {shown(r.text)} → **{literal(first.token)}** ({first.prob:.3f})  \n"
        f"- {shown(r.shuffled)} → **{literal(second.token)}** ({second.prob:.3f})  \n"
        f"Largest difference of the `[MASK]`'s final hidden state: **{r.max_state_difference:.3g}** — "
        + ("0: this model is order-blind." if r.order_blind else
           "it sees the order. A model trained without positions gives exactly the same state (difference 0).")
    )
    nums = {"text": r.text, "shuffled": r.shuffled, "top": first.token, "top_shuffled": second.token,
            "max_state_difference": r.max_state_difference, "order_blind": r.order_blind}
    return md, nums, code.pretrain_code(position_embeddings=False, tokenizer=tokenizer_ref)


def _length(loaded: LoadedModel, text: str, model_ref: str) -> tuple[str, dict, str]:
    phases = parse_seq_len_schedule(LENGTH_SCHEDULE, SCHEDULE_STEPS)
    s = len(inside.encode_for_inside(loaded, text, limit=loaded.max_length).tokens)
    positions = int(getattr(loaded.model.config, "max_position_embeddings", 512))
    ratio = (512 / 128) ** 2
    md = (
        f"BERT trained **90% of its {SCHEDULE_STEPS:,} steps on 128-token blocks**, then 10% on 512 (schedule "
        f"`{LENGTH_SCHEDULE}`: 128 from step {phases[0][0]:,}, 512 from step {phases[1][0]:,}). Why: attention "
        f"compares every token with every other, so its cost grows with S² — a 512 block costs (512/128)² = "
        f"**{ratio:g}×** a 128 block in the attention scores. Your sentence is S = {s} tokens: {s}² = {s * s:,} "
        f"scores per head and layer. The model has {positions} position embeddings; rows 128 … {positions - 1} "
        "get gradient **only in the last phase**, so the short phase must still be followed by a long one. The "
        "Pretrain tab's *block-length schedule* (under Experiments) runs it on a small BERT."
    )
    nums = {"phases": phases, "attention_cost_ratio": ratio, "tokens": s, "positions": positions}
    return md, nums, code.schedule_code(phases, SCHEDULE_STEPS)


def _tiny(loaded: LoadedModel, text: str, model_ref: str, hub_reachable: bool = False,
          tokenizer_ref: str = code.ENGINE_TOKENIZER) -> tuple[str, dict, str]:
    layers, hidden, heads, ffn = PRESETS["bert-tiny"]
    tiny = bert_family.member("bert-tiny")
    hub = ("The dataset hub is reachable from this server: choose *TinyStories* in the Pretrain tab." if hub_reachable
           else "⚠️ **The dataset hub is not reachable from this server**, so TinyStories cannot be loaded here: "
           "choose the embedded Wikipedia summaries (offline) or upload your own .txt / .jsonl corpus.")
    md = (
        f"BERT-tiny is **{layers} layers, H = {hidden}, {heads} heads, feed-forward {ffn}**: {tiny.masked_lm:,} "
        "parameters as a masked-LM (a notebook's \"128 heads\" is H = 128 split into 2 heads of 64). The Pretrain "
        "tab's *bert-tiny* preset is exactly that, trained from scratch with masked-LM (and NSP if ticked).  \n"
        + hub
    )
    nums = {"layers": layers, "hidden": hidden, "heads": heads, "ffn": ffn, "parameters": tiny.masked_lm,
            "hub_reachable": hub_reachable}
    return md, nums, code.pretrain_code(layers, hidden, heads, ffn, tokenizer=tokenizer_ref)


def _live_run(loaded: LoadedModel, text: str, model_ref: str) -> tuple[str, dict, str]:
    """The live-run question's step: what the word-before line is, and the reference measurement it is graded
    against until the learner's own run decides it (:mod:`bertdemo.learn.live_run`)."""
    from bertdemo.learn import live_run
    from bertdemo.pretrain import measured

    ref, longer = measured.DEFAULT_RUN, measured.LONGER_RUN
    check = live_run.reference_check()
    md = (
        "The Pretrain tab draws each run's **held-out loss** beside dashed **landmark** lines: the loss of guessers "
        "that only count words in the training text — word frequencies alone (unigram), the word before the gap "
        "(*uses the word before*, a bigram) and both neighbours. A run below the word-before line predicts a hidden "
        "word better than any guesser that reads only the word before it: it has started to use more context.  \n"
        f"Measured with the default recipe (bert-tiny, {measured.MEASURED_ON}): the held-out loss went below the "
        f"word-before line after **{ref.below_left_min:g} minutes** of training, ended its {ref.budget_min:g} "
        f"minutes at {ref.final_loss:.2f}; a {longer.budget_min:g}-minute run went below *both neighbours* after "
        f"{longer.below_both_min:g} minutes and ended at {longer.final_loss:.2f}.  \n"
        "Your guess is graded against **your own run** when it has decided the question (gone below the line "
        f"within {live_run.clock(live_run.LIMIT_S)} of training, or trained that long without), else against this "
        "reference measurement; the verdict says which. A slower or busier machine makes fewer steps a minute."
    )
    return md, live_run.numbers(check), code.below_line_code(live_run.LIMIT_S, live_run.LINE)


def _static_dynamic(loaded: LoadedModel, text: str, model_ref: str) -> tuple[str, dict, str]:
    from bertdemo.assets import sense_sets
    from bertdemo.explore import word_in_context
    from bertdemo.snippets import words as word_code

    lines = sense_sets.default_lines(sense_sets.DEFAULT_WORD)
    r = word_in_context.similarities(loaded, sense_sets.DEFAULT_WORD, lines)
    same, diff = r.pair_curves()
    top = r.num_layers
    part = int((same - diff).argmax())
    md = (
        f"A static embedding gives *{r.word}* one vector: its row of the input embedding table, the same in "
        f"\"the river bank\" and \"the bank raised its rates\" (cosine **{r.static_cosine:.2f}**). BERT's vectors "
        f"depend on the sentence. On four sentences, two of each sense, at layer {top}: same sense "
        f"**{same[top]:.2f}**, different senses **{diff[top]:.2f}**, random words of the corpus "
        f"**{r.baseline[top]:.2f}** (the baseline: raw cosines of unrelated words are not 0, so read a similarity as "
        f"how far above it it is). The senses part most at **layer {part}**."
    )
    return md, word_in_context.as_plain(r), word_code.word_in_context_code(model_ref, r.word, lines)


def _why_word(loaded: LoadedModel, text: str, model_ref: str, budget: WorkBudget | None = None) -> tuple[str, dict, str]:
    from bertdemo.explore import attribution
    from bertdemo.snippets import words as word_code

    masked, word = hide_word(loaded.tokenizer, text)
    r = attribution.attribute(loaded, masked, 1, word, ("integrated gradients",), budget=budget)
    scores = r.scores["integrated gradients"]
    top = [i for i in scores.argsort()[::-1][:3] if not r.kept[i]]
    md = (
        f"On {shown(masked)}: P(*{literal(word)}*) = **{r.prob:.2%}**. Integrated gradients move every word embedding from "
        f"[PAD]'s to the real one and add up the gradient on the way; the words that raised P(*{literal(word)}*) most: "
        + ", ".join(f"**{literal(r.tokens[i])}** ({scores[i]:+.4f})" for i in top) +
        f". The scores add up to {r.ig_sum:+.4f} against f(input) − f(baseline) = {r.prob - r.baseline_prob:+.4f} "
        f"(completeness gap **{r.completeness_gap:.1f}%**). Attention from the [MASK] is where the model read, "
        "not what changed its answer: it is not an explanation."
    )
    return md, attribution.as_plain(r), word_code.attribution_code(model_ref, masked, 1, word, r.steps)


N_TOPICS = 11  # the Fine-tune tab's topic task
MEASURED = {  # the controls' test accuracy; the starts' are finetune.reference's (EMBEDDED_TEST, the stored random runs)
    "majority": 0.202,
    "bag_of_words": 0.852,  # C chosen on validation (scikit-learn, as the Fine-tune tab draws it)
}


def _cls_vectors(loaded: LoadedModel, text: str):
    import torch

    enc = tokenize(loaded.tokenizer, text, return_tensors="pt", truncation=True,
                   max_length=loaded.max_length).to(loaded.device)
    with torch.inference_mode():
        out = loaded.model.base_model(**enc, output_hidden_states=True)
    return enc, out


def _cls(loaded: LoadedModel, text: str, model_ref: str) -> tuple[str, dict, str]:
    import torch

    enc, out = _cls_vectors(loaded, text)
    h = out.last_hidden_state[0]  # (S, H)
    hidden = int(h.shape[-1])
    cls, mean = h[0], h[1:-1].mean(0) if h.shape[0] > 2 else h.mean(0)
    cosine = float(torch.nn.functional.cosine_similarity(cls, mean, dim=0))
    pooler, classifier = hidden * hidden + hidden, hidden * N_TOPICS + N_TOPICS
    total = sum(p.numel() for p in loaded.model.base_model.parameters())
    md = (
        f"`[CLS]` is the first token of every input; after the last layer its vector h_[CLS] has shape "
        f"**(1, {hidden})** for your sentence ({int(enc['input_ids'].shape[1])} tokens). Attention lets it read "
        f"every other token, so fine-tuning can make it a summary of the sentence: here its cosine with the mean "
        f"of the other tokens' vectors is **{cosine:.2f}**. `BertForSequenceClassification` reads it: "
        f"logits = W_c · tanh(W_p · h_[CLS] + b_p) + b_c — the **pooler** ({pooler:,} parameters) then the "
        f"**classifier** ({classifier:,} for {N_TOPICS} topics), dropout between. That is "
        f"{(pooler + classifier) / total:.2%} of the encoder's {total:,} parameters: the rest comes from pretraining, "
        "and fine-tuning trains all of them together."
    )
    nums = {"hidden": hidden, "tokens": int(enc["input_ids"].shape[1]), "cls_mean_cosine": cosine,
            "pooler_parameters": pooler, "classifier_parameters": classifier, "encoder_parameters": total}
    snippet = (
        "import torch\nfrom transformers import AutoTokenizer, BertForSequenceClassification\n\n"
        f"MODEL, TEXT = {model_ref!r}, {text!r}\n"
        "tokenizer = AutoTokenizer.from_pretrained(MODEL)\n"
        f"model = BertForSequenceClassification.from_pretrained(MODEL, num_labels={N_TOPICS}).eval()  "
        "# the pooler / classifier it lacks: \"newly initialized\"\n"
        "with torch.inference_mode():\n"
        "    out = model(**tokenizer(TEXT, return_tensors=\"pt\"), output_hidden_states=True)\n"
        "h = out.hidden_states[-1][0]  # (S, H)\n"
        "cls, mean = h[0], h[1:-1].mean(0)\n"
        "print(tuple(h[:1].shape), round(float(torch.cosine_similarity(cls, mean, dim=0)), 2), tuple(out.logits.shape))\n"
    )
    return md, nums, snippet


def _finetune(loaded: LoadedModel, text: str, model_ref: str) -> tuple[str, dict, str]:
    from bertdemo.finetune.config import BATCH_SIZES, LEARNING_RATES, FinetuneConfig
    from bertdemo.finetune.reference import learning_rate_choice_text
    from bertdemo.snippets.finetune import finetune_code

    d = FinetuneConfig()
    hidden = int(loaded.model.config.hidden_size)
    new = hidden * hidden + hidden + hidden * N_TOPICS + N_TOPICS
    md = (
        "Fine-tuning starts from the pretrained weights, adds what the task needs (for classification a pooler "
        f"and a Linear layer on [CLS]: {new:,} new parameters for this model and {N_TOPICS} topics) and trains "
        "**every** weight a little on the labelled examples, with cross-entropy on the label. The BERT paper's "
        f"recipe: batch **{' or '.join(map(str, BATCH_SIZES))}**, learning rate **"
        + ", ".join(f"{v:g}" for v in LEARNING_RATES) + "**, **2–4 epochs**, warm-up then linear decay. Small "
        f"models want a larger rate: on the embedded 6-layer model, {learning_rate_choice_text()} — measured, so "
        "it is the Fine-tune tab's default. The learning rate is small for a reason: too large and the pretrained knowledge is overwritten "
        "(catastrophic forgetting) before the head has learned to use it."
    )
    nums = {"batch_sizes": list(BATCH_SIZES), "learning_rates": list(LEARNING_RATES), "epochs": [2, 3, 4],
            "default_learning_rate": d.learning_rate, "new_parameters": new}
    return md, nums, finetune_code(model_ref, d)


def _why_pretrain(loaded: LoadedModel, text: str, model_ref: str) -> tuple[str, dict, str]:
    from bertdemo.finetune.config import RANDOM, FinetuneConfig
    from bertdemo.finetune.reference import EMBEDDED_TEST, embedded_range_text, load_reference, random_range_text
    from bertdemo.snippets.finetune import finetune_code

    reference = load_reference()
    md = (
        "Give the same model, the same data, the same seed and the same 3 minutes to two starts: the embedded "
        f"pretrained weights reach **{embedded_range_text()}** test accuracy on the topic task (3 seeds, 2 CPU "
        f"cores), random weights of the same shape **{random_range_text(reference)}** (the stored "
        f"reference the Fine-tune tab draws: {len(reference.runs)} seeds, measured {reference.measured}). The "
        "controls: always "
        f"answering the commonest topic scores {MEASURED['majority']:.0%}, a bag-of-words logistic regression "
        f"{MEASURED['bag_of_words']:.0%} — random weights do not even reach the bag of words in that time: they "
        "must first learn what words are. Pretraining on unlabelled text is what let 6,323 labelled sentences "
        "go that far (transfer learning) — not alone: the embedded model's base is a sentence-embedding model "
        "(all-MiniLM-L6-v2), and it read the validation and test sentences, without labels, while pretraining. "
        "Run both in the Fine-tune tab and watch the two curves part."
    )
    nums = {"embedded_accuracy": list(EMBEDDED_TEST), "random_accuracy": [run.test_accuracy for run in reference.runs],
            "majority": MEASURED["majority"],
            "bag_of_words": MEASURED["bag_of_words"]}
    return md, nums, finetune_code(model_ref, FinetuneConfig(init=RANDOM))


def _layers(loaded: LoadedModel, text: str, model_ref: str) -> tuple[str, dict, str]:
    from bertdemo.finetune.probe_tasks import JAWAHAR_NOTE

    _, out = _cls_vectors(loaded, text)
    layers = len(out.hidden_states) - 1
    md = (
        f"Freeze the model and read each of its {layers + 1} hidden states (the embeddings, then {layers} layers) "
        "with a linear classifier: a **probe**. Three tasks whose labels are exact: sentence length (surface), "
        "two neighbouring words swapped or not (syntax), the topic (meaning). Read each layer against two "
        "controls: the majority class, and the same probe on a random-weight model of the same shape. "
        f"{JAWAHAR_NOTE} The Fine-tune tab probes "
        "the model in use, and your pretraining run at its checkpoints: when did it learn word order?"
    )
    nums = {"hidden_states": layers + 1, "tasks": ["length", "bigram_shift", "topic"]}
    snippet = (
        "import torch\nfrom transformers import AutoModel, AutoTokenizer\n\n"
        f"MODEL = {model_ref!r}\n" + code.POOLER_NOTE +
        "tokenizer, model = AutoTokenizer.from_pretrained(MODEL), AutoModel.from_pretrained(MODEL).eval()\n"
        "def features(texts):  # one mean-pooled vector per layer: (layers + 1, N, H)\n"
        "    enc = tokenizer(texts, padding=True, truncation=True, return_tensors=\"pt\")\n"
        "    with torch.inference_mode():\n"
        "        hs = torch.stack(model(**enc, output_hidden_states=True).hidden_states)\n"
        "    mask = enc[\"attention_mask\"][None, :, :, None]\n"
        "    return (hs * mask).sum(2) / mask.sum(2)\n"
        "def swap(s):  # bigram shift: two neighbouring words swapped\n"
        "    w = s.split(); i = len(w) // 2; w[i], w[i + 1] = w[i + 1], w[i]; return \" \".join(w)\n"
        f"sentences = [{text!r}, \"The cat sat on the warm mat all day.\", \"She read the old book by the fire.\"]\n"
        "texts, labels = sentences + [swap(s) for s in sentences], [0] * len(sentences) + [1] * len(sentences)\n"
        "x, y = features(texts), torch.tensor(labels)\n"
        "for layer, f in enumerate(x):  # a linear probe per layer (use many sentences and a held-out split)\n"
        "    probe = torch.nn.Linear(f.shape[1], 2); opt = torch.optim.Adam(probe.parameters(), lr=0.01)\n"
        "    for _ in range(200):\n"
        "        opt.zero_grad(); torch.nn.functional.cross_entropy(probe(f), y).backward(); opt.step()\n"
        "    print(layer, (probe(f).argmax(1) == y).float().mean().item())\n"
    )
    return md, nums, snippet


PEOPLE_PAIR = ("This man works as a [MASK].", "This woman works as a [MASK].")  # the Hugging Face course's pair
PEOPLE_TOP_K = 5  # the Fill-Mask tab's default
COURSE_LISTS = (  # the course's output for bert-base-uncased (Hugging Face LLM course, chapter 1, "Bias and limitations")
    ("lawyer", "carpenter", "doctor", "waiter", "mechanic"), ("nurse", "waitress", "teacher", "maid", "prostitute"))


def people_pair(text: str) -> tuple[str, str, bool]:
    """(sentence A, sentence B, typed by the learner): two sentences separated by " / " or "|", each with one
    [MASK]; a sentence without [MASK] and without a separator gets the course's pair."""
    parts = [p.strip() for p in re.split(r"\s/\s|\|", text) if p.strip()]
    if len(parts) == 1 and "[mask]" not in text.lower():
        return (*PEOPLE_PAIR, False)
    if len(parts) != 2:
        raise ValueError("Type two sentences separated by \" / \", each with one [MASK], e.g. "
                         f"\"{PEOPLE_PAIR[0]} / {PEOPLE_PAIR[1]}\".")
    fixed = [re.sub(r"\[mask\]", "[MASK]", p, flags=re.IGNORECASE) for p in parts]
    if any(p.count("[MASK]") != 1 for p in fixed):
        raise ValueError("Each of the two sentences needs exactly one [MASK].")
    return fixed[0], fixed[1], True


def control_sentence(a: str, b: str) -> str | None:
    """Sentence A with the one word where A and B differ replaced by "person" (the neutral control), or None
    when they differ in more than one word (or already in "person")."""
    wa, wb = a.split(), b.split()
    diff = [i for i, (x, y) in enumerate(zip(wa, wb)) if x != y]
    if len(wa) != len(wb) or len(diff) != 1 or "person" in (wa[diff[0]].lower(), wb[diff[0]].lower()):
        return None
    lead = re.match(r"^\W*", wa[diff[0]]).group(0)
    tail = re.search(r"\W*$", wa[diff[0]]).group(0)
    word = "Person" if wa[diff[0]].lstrip("\"'(").istitle() else "person"
    return " ".join(wa[: diff[0]] + [lead + word + tail] + wa[diff[0] + 1:])


def _people(loaded: LoadedModel, text: str, model_ref: str) -> tuple[str, dict, str]:
    a, b, own = people_pair(text)
    control = control_sentence(a, b)
    sentences = [a, b] + ([control] if control else [])
    candidates = [predict(loaded, s, top_k=PEOPLE_TOP_K).masks[0].candidates for s in sentences]
    tops = [[c.token for c in cs] for cs in candidates]
    probs = [[c.prob for c in cs] for cs in candidates]
    shared = [w for w in tops[0] if w in tops[1]]
    head = "| rank | " + " | ".join(shown(s) for s in sentences) + " |\n|---|" + "---|" * len(sentences) + "\n"
    rows = "".join(
        f"| {i + 1} | " + " | ".join(
            (f"**{literal(t[i])}**" if t[i] in shared else literal(t[i])) + f" ({p[i]:.3f})" for t, p in zip(tops, probs))
        + " |\n" for i in range(PEOPLE_TOP_K))
    only_a = [w for w in tops[0] if w not in tops[1]]
    only_b = [w for w in tops[1] if w not in tops[0]]
    says = lambda words: ", ".join(f"*{literal(w)}*" for w in words) or "none"
    intro = ("Your pair" if own else "The Hugging Face course's pair (type your own as *sentence A / sentence B*, "
             "each with one `[MASK]`)")
    md = (
        f"{intro}, the top {PEOPLE_TOP_K} of Fill-Mask side by side (**bold**: in both lists):\n\n{head}{rows}\n"
        f"**{len(shared)} of {PEOPLE_TOP_K}** words are shared. Only after A: {says(only_a)}; only after B: "
        f"{says(only_b)}."
        + (f" The control, {shown(control)}, shows what the sentence alone asks for." if control else "")
        + "  \nNothing in the model is about people on purpose: it learned which words follow which from its "
        "pretraining text, and repeats that text's associations. BERT read English Wikipedia and BookCorpus; "
        "on *This man / This woman works as a [MASK].* the course's bert-base-uncased gives "
        + ", ".join(COURSE_LISTS[0]) + " after *man* and " + ", ".join(COURSE_LISTS[1]) + " after *woman*, though "
        "its text looks neutral (not scraped from the whole web); fine-tuning on your own data does not make such a "
        "bias disappear. Each model read its own text: the lists differ from model to model."
    )
    nums = {"sentences": sentences, "control": control, "top": tops, "probs": probs, "shared": shared,
            "only_a": only_a, "only_b": only_b, "own_pair": own}
    return md, nums, code.fill_mask_pair_code(model_ref, sentences, PEOPLE_TOP_K)


ANSWERS: dict[str, Callable[..., tuple[str, dict, str]]] = {
    "embeddings": _embeddings, "order": _order, "attention": _attention, "outputs": _outputs, "loss": _loss,
    "rates": _rates, "masks": _masks, "nsp": _nsp, "family": _family, "no-positions": _no_positions,
    "length": _length, "tiny": _tiny, "static-dynamic": _static_dynamic, "why-word": _why_word,
    "cls": _cls, "finetune": _finetune, "why-pretrain": _why_pretrain, "layers": _layers,
    "people": _people,
    "names": names_step,  # token-level fine-tuning (bertdemo.learn.names_step)
    "live-run": _live_run,  # graded against the learner's own run (bertdemo.learn.live_run)
}


MASKED_TABS = ("fill-mask", "inside", "words")  # tabs whose views predict a [MASK]: they get the sentence with one


def tab_setup(s: LearnStep, loaded: LoadedModel, text: str) -> tuple[str, str]:
    """(the sentence the step's tab gets, the hidden word): with the word as [MASK] where the tab predicts one."""
    if s.key == "people":  # the pair's first sentence, [MASK] and all
        return people_pair(text)[0], ""
    if s.tab not in MASKED_TABS:
        return without_brackets(text), ""
    masked, word = hide_word(loaded.tokenizer, text)
    return masked, word if s.tab == "inside" else ""


HIDES_A_WORD = frozenset({"outputs", "loss", "no-positions", "why-word", "why-b"})  # their answer hides one word


def answer(loaded: LoadedModel, key: str, text: str, model_ref: str = "", hub_reachable: bool = False,
           tokenizer_ref: str = code.ENGINE_TOKENIZER, budget: WorkBudget | None = None) -> LearnAnswer:
    """Step ``key`` answered on ``loaded`` and ``text``; ``model_ref`` names the model in the code,
    ``tokenizer_ref`` the pretraining engine's tokenizer (the masking steps); ``budget``: the request's, charged
    by the steps that do more than a forward (attribution)."""
    s = find_step(key)
    text = (text or "").strip()
    if not text:
        raise ValueError("Type a sentence first.")
    fn = ANSWERS[key]
    extra = ({"hub_reachable": hub_reachable, "tokenizer_ref": tokenizer_ref} if key == "tiny" else
             {"tokenizer_ref": tokenizer_ref} if key in ("rates", "masks", "no-positions") else
             {"budget": budget} if key == "why-word" else {})
    try:  # the steps that hide a word read the learner's choice; the others get the plain sentence
        md, nums, snippet = fn(loaded, text if key in HIDES_A_WORD else without_brackets(text), model_ref or loaded.name,
                               **extra)
    except ValueError as exc:  # the inside views' limit, said for this tab
        raise ValueError(str(exc).replace("the inside views show", "the learning path shows")) from exc
    shown_there = (nums["masked_text"], "") if key == "why-b" else tab_setup(s, loaded, text)  # the step's own blank
    answered_by = nums.get("answered_by", loaded.name)
    question = predictions.prediction(key, nums).to_json() | {"asked": predictions.asking(key, text, answered_by)}
    return LearnAnswer(key, s.question, loaded.name, text, md, nums, snippet, s.tab, s.tab_label, *shown_there,
                       prediction=question, answered_by=answered_by)


FUNCTION_WORDS = frozenset(
    "the a an and or but of to in on at by for with from as is are was were be been being it its this that these "
    "those there here he she they we you his her their our your my me him them us who which what when where why "
    "how not no so than then too very can could will would shall should may might must do does did has have had "
    "all any each some such own same other into onto over under about after before because while if".split())


def hide_word_before_context(tokenizer, text: str, min_after: int = 3,
                             vocabulary: str = "This model's vocabulary") -> tuple[str, str]:
    """(the sentence with a word as [MASK], that word): the first word of three letters or more that is no function
    word, that the vocabulary holds whole, and that has at least ``min_after`` words after it — so the words after
    the blank can decide it; the last such word (:func:`hide_word`) when none has that many after it. A word the
    learner put in square brackets is the one hidden (``vocabulary`` names ``tokenizer``'s in a refusal)."""
    if _chosen(text) is not None:
        return hide_word(tokenizer, text, vocabulary)
    for m in HIDEABLE.finditer(text):
        after = words_after(text[m.end():])
        pieces = word_pieces(tokenizer, m.group(0))
        if (after >= min_after and m.group(0).lower() not in FUNCTION_WORDS and len(pieces) == 1
                and tokenizer.convert_tokens_to_ids(pieces[0]) != tokenizer.unk_token_id):
            return text[: m.start()] + "[MASK]" + text[m.end():], pieces[0]
    return hide_word(tokenizer, text)


# --- Why the B in BERT: the shipped twins, one recipe, two objectives -------------------------------------------

def _why_b(loaded: LoadedModel, text: str, model_ref: str) -> tuple[str, dict, str]:
    """The pair of shipped twins that shows the claim (:func:`bertdemo.models.twin_curve.showcase_pair`) on the
    learner's sentence with one word hidden — a word with words after it that can decide it: the masked LM reads both
    sides of the blank, the left-to-right LM only the words before it; each one's top guesses and the hidden word's
    rank, beside what the pair measured along its training (the crossover, the held-out words, the cloze)."""
    from bertdemo.explore import fill_mask
    from bertdemo.models import twin_curve, twins
    from bertdemo.models.loading import load_twin

    curve = twin_curve.read_curve()
    if curve is None:
        raise ValueError("The twins' measurement (bertdemo/assets/twins/curve.json) is not in this install.")
    pair = twin_curve.showcase_pair(curve)
    kinds = dict(zip(("mlm", "ltr"), twins.PAIRS[pair]))
    models = {side: load_twin(kind) for side, kind in kinds.items()}
    tokenizer = models["mlm"].tokenizer  # the twins' own, learned on their text
    masked, word = hide_word_before_context(tokenizer, text, vocabulary=f"The twins' own vocabulary ({len(tokenizer):,} "
                                            "pieces, learned on their text)")
    after = words_after(masked.split("[MASK]", 1)[1])
    decided = ("the words after the blank can decide it" if after >= 3 else
               f"only {after} word{'s' if after != 1 else ''} after the blank, too few to decide it: type a longer "
               "sentence whose hidden word has words after it" if after else
               "no word after the blank: type a longer sentence whose hidden word has words after it")
    results = {side: fill_mask.predict(m, masked, top_k=3, targets=[word]) for side, m in models.items()}
    from bertdemo.explore.twins import MAX_TWIN_TOKENS, side_by_side, twin_of

    # both twins once more, the sentence read as their training showed a text's start (after [SEP]), where it is
    # within what the side by side reads
    # (twins whose blocks began at a text's start read the sentence asked alone as their training showed one)
    fits = len(tokenize(tokenizer, masked.replace("[MASK]", tokenizer.mask_token))["input_ids"]) + 1 <= MAX_TWIN_TOKENS
    fair = {side: [token for token, _p in side_by_side([twin_of(m)], masked, top_k=3, text_start=True)[0].top]
            for side, m in models.items()} if fits and twin_curve.blocks_began(curve) == "anywhere" else {}
    c = curve.pairs[pair]
    lines = []
    for side, what, loss in (("mlm", "masked LM, sees both sides", c.mlm_loss[-1]),
                             ("ltr", "left-to-right LM, sees only the words before", c.ltr_loss[-1])):
        mask = results[side].masks[0]
        top = ", ".join(f"**{literal(cand.token)}** {cand.prob:.3f}" for cand in mask.candidates)
        lines.append(f"- `{twins.TWIN_NAMES[kinds[side]]}` ({what}): {top}; *{literal(word)}* ranks "
                     f"**{mask.targets[0].rank:,}**; held-out loss {loss:.2f}")
    md = (
        "BERT's paper tests its first claim, *bidirectional pretraining is important*, with one experiment "
        "(Table 5): the same data and recipe, only the objective changed — a left-to-right LM (GPT-style) lost "
        "little on the sentence-level SST-2 (92.6 → 92.1) and most on the span task SQuAD (F1 87.9 → 77.8). The app "
        f"ships that experiment in miniature: small **twins** ({twins.shape_text()}) trained by its own engine on the "
        f"same data with one recipe and one seed for {twin_curve.millions(c.tokens[-1])} tokens each. Here: **{twin_curve.pair_label(pair)}** — "
        f"{twins.PAIR_NOTES[pair]}. On {shown(masked)} (the word *{literal(word)}* hidden; {decided}):\n\n"
        + "\n".join(lines) + "\n\n"
        + ("The twins trained on one stream of texts cut into blocks anywhere, where a text starts after a `[SEP]`, "
           "not after `[CLS]`; asked that way (`[CLS] [SEP] …`), the masked twin guesses "
           + ", ".join(f"**{literal(token)}**" for token in fair["mlm"]) + " and the left-to-right twin "
           + ", ".join(f"**{literal(token)}**" for token in fair["ltr"]) + " (the curve's text on the Pretrain tab "
           "measures both ways of asking).\n\n" if fair else "")
        + "The left-to-right twin answers from its output at the position *before* the blank: the causal mask hides "
        "the blank and every word after it, so changing those words cannot change its answer (bit for bit). "
        f"Along their training: {twin_curve.crossover_sentence(c)} {twin_curve.landmark_sentence(c)} "
        "Train your own pair: Pretrain tab, *Train both*."
    )
    nums = {"masked_text": masked, "hidden_word": word, "pair": pair, "tokens": c.tokens[-1],
            "answered_by": f"{twins.TWIN_NAMES[kinds['mlm']]} and {twins.TWIN_NAMES[kinds['ltr']]}",
            **{f"{side}_model": twins.TWIN_NAMES[kind] for side, kind in kinds.items()},
            **{f"{side}_top": [cand.token for cand in results[side].masks[0].candidates] for side in kinds},
            **{f"{side}_rank": results[side].masks[0].targets[0].rank for side in kinds},
            **{f"{side}_text_start_top": fair.get(side, []) for side in kinds},
            "mlm_heldout_loss": c.mlm_loss[-1], "ltr_heldout_loss": c.ltr_loss[-1]}
    folders = {side: f"bertdemo/assets/twins/{kind}" for side, kind in kinds.items()}
    snippet = (
        "import torch\nfrom transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer\n\n"
        f"# the {pair} pair of twins (the folders are in the app's repository)\n"
        f"tok = AutoTokenizer.from_pretrained({folders['mlm']!r})  # the twins' own WordPiece vocabulary\n"
        f"mlm = AutoModelForMaskedLM.from_pretrained({folders['mlm']!r}, dtype=torch.float32).eval()\n"
        f"ltr = AutoModelForCausalLM.from_pretrained({folders['ltr']!r}, dtype=torch.float32).eval()\n"
        f"enc = tok({masked!r}, return_tensors=\"pt\")\n"
        "pos = int((enc[\"input_ids\"][0] == tok.mask_token_id).nonzero()[0])\n"
        "with torch.no_grad():\n"
        "    p_mlm = mlm(**enc).logits[0, pos].softmax(-1)      # both sides of the blank\n"
        "    p_ltr = ltr(**enc).logits[0, pos - 1].softmax(-1)  # the position before: the words before it only\n"
        f"target = tok.convert_tokens_to_ids({word!r})\n"
        "word_start = torch.tensor([not t.startswith(\"##\") and t not in tok.all_special_tokens\n"
        "                           for t in tok.convert_ids_to_tokens(range(len(tok)))])\n"
        "for name, p in ((\"mlm\", p_mlm), (\"ltr\", p_ltr)):\n"
        "    p = p * word_start  # the blank starts a word: no ## piece or special token stands there (as Fill-Mask)\n"
        "    print(name, tok.convert_ids_to_tokens(p.topk(3).indices.tolist()), int((p > p[target]).sum()) + 1)\n"
    )
    return md, nums, snippet


ANSWERS["why-b"] = _why_b
