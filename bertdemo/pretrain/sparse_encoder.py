"""The encoder of a masked-LM step, with its last layer computed only where the loss looks.

The masked-LM loss reads the final hidden states at the k predicted positions of each block
and nowhere else. In the last layer, only the keys and values need every position; the
queries, the attention output, the feed-forward block and both LayerNorms are needed only at
those k positions (k = 15 % of T). :func:`encode_at` runs every other layer exactly as
``BertModel`` does and the last one that way: the same function of the same weights (equal to
``model.bert(...).last_hidden_state`` gathered at ``positions``, with the same dropout), at
about a third of the last layer's cost. Packed blocks have no padding, so no attention mask.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from transformers import BertModel


def encode_at(bert: BertModel, input_ids: torch.Tensor, positions: torch.Tensor,
              token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
    """(B, k, H) final hidden states of (B, T) ``input_ids`` at (B, k) ``positions``."""
    hidden = bert.embeddings(input_ids=input_ids, token_type_ids=token_type_ids)  # (B, T, H)
    *lower, last = bert.encoder.layer
    for layer in lower:
        hidden = layer(hidden)  # (B, T, H)
    B, T, H = hidden.shape
    at = hidden.gather(1, positions.unsqueeze(-1).expand(-1, -1, H))  # (B, k, H)
    attn = last.attention.self
    heads, d = attn.num_attention_heads, attn.attention_head_size
    q = attn.query(at).view(B, -1, heads, d).transpose(1, 2)  # (B, nh, k, d)
    k = attn.key(hidden).view(B, T, heads, d).transpose(1, 2)  # (B, nh, T, d)
    v = attn.value(hidden).view(B, T, heads, d).transpose(1, 2)  # (B, nh, T, d)
    context = F.scaled_dot_product_attention(q, k, v, dropout_p=attn.dropout.p if attn.training else 0.0,
                                             scale=attn.scaling)  # (B, nh, k, d)
    context = context.transpose(1, 2).reshape(B, -1, heads * d)  # (B, k, H)
    attention_output = last.attention.output(context, at)  # (B, k, H): dense, dropout, LayerNorm(+ residual)
    return last.output(last.intermediate(attention_output), attention_output)  # (B, k, H)
