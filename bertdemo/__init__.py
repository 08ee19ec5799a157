"""BERT Explorer: see BERT work — WordPiece tokens, masked-word predictions, attention, live pretraining."""

__version__ = "0.1.0"
