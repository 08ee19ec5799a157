""""Show the code" generators: the few lines of stock transformers / torch that reproduce a view's numbers.

One module per group of tabs: :mod:`views` (Tokenizer, Fill-Mask, Attention, Inside BERT, Masking,
Pretrain), :mod:`words` (Word in context) and :mod:`finetune` (Fine-tune). Torch-free plain strings;
this package file imports nothing.
"""
