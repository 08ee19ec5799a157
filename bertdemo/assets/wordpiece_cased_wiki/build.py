"""Rebuild this folder's cased WordPiece tokenizer from the embedded Wikipedia summaries.

    python -m bertdemo.assets.wordpiece_cased_wiki.build

Deterministic for a given corpus file and `tokenizers` version; needs no network.
"""

from __future__ import annotations

from pathlib import Path

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import BertTokenizerFast

from bertdemo.models import embedded

OUT = Path(__file__).resolve().parent
VOCAB_SIZE = 8000
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def build(out: Path = OUT) -> BertTokenizerFast:
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=100))
    # cased: no lowercasing, accents kept (what bert-base-cased does)
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                strip_accents=False, lowercase=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="##")
    trainer = trainers.WordPieceTrainer(vocab_size=VOCAB_SIZE, min_frequency=2, special_tokens=SPECIALS,
                                        continuing_subword_prefix="##", limit_alphabet=400)
    tok.train_from_iterator(embedded.wiki_summaries(), trainer=trainer)
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    fast = BertTokenizerFast(tokenizer_object=tok, do_lower_case=False, strip_accents=False,
                             unk_token="[UNK]", sep_token="[SEP]", pad_token="[PAD]", cls_token="[CLS]",
                             mask_token="[MASK]", model_max_length=512)
    fast.save_pretrained(out)
    return fast


if __name__ == "__main__":
    built = build()
    print(f"{len(built)} entries written to {OUT}")
