"""Fused vocabulary projection + cross-entropy for the masked-LM head (training path).

``loss = CE(h @ W^T + b, y)`` over the predicted positions, computed chunk by chunk with its
gradient formed in the same pass (softmax - one_hot), so the (N, V) logits are never kept
for autograd, never converted between dtypes twice and never run through a separate
log-softmax backward. The three matmuls per chunk run in the compute dtype (bf16 under
autocast); softmax, loss and the accumulated weight/bias gradients are fp32.
Rows whose label is -100 contribute nothing (DataCollatorForLanguageModeling semantics).
"""

from __future__ import annotations

import torch

from bertdemo.pretrain.masking import IGNORE_INDEX  # the one -100

CHUNK_ROWS = 1024  # bounds the (chunk, V) fp32 buffer: 1024 x 30522 x 4 B = 125 MB


class Workspace:
    """Reused (rows, V) buffers: fresh 100 MB allocations cost more in page faults than the math on CPU."""

    def __init__(self) -> None:
        self._buffers: dict[tuple, torch.Tensor] = {}

    def get(self, name: str, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        key = (name, dtype, str(device))
        buf = self._buffers.get(key)
        if buf is None or buf.shape != shape:
            buf = self._buffers[key] = torch.empty(shape, dtype=dtype, device=device)
        return buf


class _LinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, h, weight, bias, labels, chunk_rows: int, workspace: Workspace):
        # h (N, H), weight (V, H), bias (V,), labels (N,)
        n, vocab = h.shape[0], weight.shape[0]
        rows = max(1, min(n, chunk_rows))
        valid = labels != IGNORE_INDEX  # (N,)
        count = valid.sum().clamp(min=1).to(torch.float32)
        safe_labels = labels.clamp(min=0).unsqueeze(1)  # (N, 1)
        loss = torch.zeros((), dtype=torch.float32, device=h.device)
        grad_h = torch.empty_like(h)  # (N, H)
        need_w = ctx.needs_input_grad[1]  # False when the decoder is frozen (tied to fixed embeddings)
        grad_w = torch.zeros(weight.shape if need_w else (0,), dtype=torch.float32, device=h.device)  # (V, H)
        grad_b = torch.zeros(bias.shape, dtype=torch.float32, device=h.device)  # (V,)
        low = h.dtype != torch.float32
        buf32 = workspace.get("logits32", (rows, vocab), torch.float32, h.device)
        buf_low = workspace.get("logits_low", (rows, vocab), h.dtype, h.device) if low else None
        with torch.autocast(h.device.type, enabled=False):
            for start in range(0, n, rows):
                hc = h[start : start + rows]  # (c, H)
                c = hc.shape[0]
                yc, vc = safe_labels[start : start + rows], valid[start : start + rows]
                logits = buf32[:c]  # (c, V)
                if low:
                    torch.addmm(bias, hc, weight.t(), out=buf_low[:c])
                    logits.copy_(buf_low[:c])
                else:
                    torch.addmm(bias, hc, weight.t(), out=logits)
                row_max = logits.amax(dim=-1, keepdim=True)  # (c, 1)
                target = logits.gather(1, yc)  # (c, 1)
                logits.sub_(row_max).exp_()
                sum_exp = logits.sum(dim=-1, keepdim=True)  # (c, 1)
                lse = row_max + sum_exp.log()
                loss += torch.where(vc, (lse - target).squeeze(1), 0.0).sum()
                # d loss / d logits = softmax - one_hot; ignored rows are zeroed
                logits.mul_(torch.where(vc.unsqueeze(1), sum_exp.reciprocal(), 0.0))
                logits.scatter_add_(1, yc, -vc.to(logits.dtype).unsqueeze(1))
                grad_b += logits.sum(0)
                if low:
                    g = buf_low[:c]
                    g.copy_(logits)
                    if need_w:
                        grad_w += (g.t() @ hc).float()  # (V, H)
                else:
                    g = logits
                    if need_w:
                        grad_w.addmm_(g.t(), hc)
                grad_h[start : start + rows] = g @ weight  # (c, H)
        scale = 1.0 / count
        ctx.save_for_backward(grad_h, grad_w, grad_b, scale)
        ctx.dtypes = (weight.dtype, bias.dtype)
        ctx.need_w = need_w
        return loss * scale

    @staticmethod
    def backward(ctx, grad_loss):
        grad_h, grad_w, grad_b, scale = ctx.saved_tensors
        s = grad_loss * scale
        w_dtype, b_dtype = ctx.dtypes
        dw = (grad_w * s).to(w_dtype) if ctx.need_w else None
        return (grad_h * s.to(grad_h.dtype), dw, (grad_b * s).to(b_dtype), None, None, None)


def linear_cross_entropy(h: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, labels: torch.Tensor,
                         workspace: Workspace | None = None, chunk_rows: int = CHUNK_ROWS) -> torch.Tensor:
    """Mean CE of ``h @ weight.T + bias`` (N, V) against labels (N,) ignoring -100, without keeping the logits."""
    device_type = h.device.type
    if torch.is_autocast_enabled(device_type):
        dtype = torch.get_autocast_dtype(device_type)
        h, weight, bias = h.to(dtype), weight.to(dtype), bias.to(dtype)
    else:
        weight, bias = weight.to(h.dtype), bias.to(h.dtype)
    return _LinearCrossEntropy.apply(h, weight, bias, labels, chunk_rows, workspace or Workspace())
