"""Patch tokenization (paper App. B.2).

Per channel: the series and its first difference (zero-padded at the end) are each standardised over
the whole series, ``(z - mean) / (std_unbiased + 1e-5)``, passed through a ``Conv1d(1 -> P, kernel
patch+1)``, layer-normalised per time step and averaged inside each of the M patches. In parallel,
each patch's mean and unbiased std go through multi-scale scalar encoders. The four pieces are
concatenated and projected to P (``Linear`` + ``LayerNorm(eps=1e-15)``). The series is not normalised
anywhere else: absolute level and scale reach the model only through the scalar encoders.

The parameters are exactly the Mantis v1 token generator's at width P (``mantis-tsfm``), and
:meth:`PatchTokenizer.reference_forward` is Mantis's own forward. :meth:`PatchTokenizer.forward`
computes the same function without ever materialising the ``(N, L_0, P)`` convolution map:

* the convolution at time t is an affine map of the k-sample window ``u_t``: ``y_t = W u_t + b``;
* its LayerNorm statistics over the P outputs are closed-form in ``u_t``: the mean is removed by
  centring ``W`` and ``b`` (``W_c``, ``b_c``), and the biased variance is the quadratic form
  ``u_t' G u_t + 2 c' u_t + d`` with ``G = W_c' W_c / P``, ``c = W_c' b_c / P``, ``d = b_c' b_c / P``;
* the patch mean of the normalised outputs is therefore
  ``gamma * (W_c v_m + b_c s_m) + beta`` with ``v_m = mean_t(u_t / sigma_t)`` and
  ``s_m = mean_t(1 / sigma_t)`` over the patch: one ``(N M, k) x (k, P)`` product.

Memory and work per series drop from ``O(L_0 P)`` to ``O(L_0 k + M P)`` (the released width: the
convolution maps were 2 x 512 x 512 values per series, now 2 x 512 x 17), forward and backward alike
(autograd differentiates the closed form). The statistics run in float32 also under autocast.
``tests/test_model_tokenizer.py`` checks values and gradients against the Mantis forward.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from chorustic.model._mantis_adapter import MantisTokenGenerator
from chorustic.model.config import ChorusTICConfig

# The model's own length fix (the official model resamples inside its forward) is the harness's one App. C.2
# resampler, so a series means the same numbers to the model as to the data preprocessing.
from chorustic.resampling import resample_linear as resample_length

__all__ = ["PatchTokenizer", "resample_length"]


def _standardize(x: Tensor) -> Tensor:
    """Mantis's per-series scaling: ``(x - mean) / (std_unbiased + 1e-5)`` over the last axis."""
    return (x - x.mean(dim=-1, keepdim=True)) / (x.std(dim=-1, keepdim=True) + 1e-5)


class PatchTokenizer(MantisTokenGenerator):
    """``(N, L_0) -> (N, M, P)``: one token per patch for each of N single-channel series."""

    def __init__(self, config: ChorusTICConfig) -> None:
        super().__init__(
            hidden_dim=config.hidden_dim,
            num_patches=config.num_patches,
            patch_window_size=config.patch_size,
            scalar_scales=list(config.scalar_scales),
            hidden_dim_scalar_enc=config.hidden_dim_scalar_enc,
            epsilon_scalar_enc=config.epsilon_scalar_enc,
        )
        self.seq_len = config.seq_len

    def _check(self, x: Tensor) -> None:
        if x.ndim != 2 or x.shape[-1] != self.seq_len:
            raise ValueError(f"PatchTokenizer expects (N, {self.seq_len}) series, got {tuple(x.shape)}")

    def reference_forward(self, x: Tensor) -> Tensor:
        """Mantis's own forward (materialises the convolution maps); for tests and comparisons."""
        self._check(x)
        return super().forward(x.unsqueeze(1))

    # ------------------------------------------------------------------ the closed form
    def _conv_ln_patch_mean(self, z: Tensor, branch: int) -> Tensor:
        """Patch means of ``LayerNorm(Conv1d(z))`` for standardised series ``z (N, L)`` -> ``(N, M, P)``."""
        conv = self.convs[branch].conv
        ln = self.layer_norms[branch]
        dt = z.dtype
        w = conv.weight[:, 0, :].to(dt)  # (P, k)
        b = conv.bias.to(dt)
        p_dim, k = w.shape
        pad = conv.padding[0]
        n, length = z.shape
        windows = F.pad(z, (pad, pad)).unfold(-1, k, 1)  # (N, L, k): u_t
        wc = w - w.mean(dim=0, keepdim=True)
        bc = b - b.mean()
        gram = wc.T @ wc / p_dim  # (k, k)
        c = wc.T @ bc / p_dim  # (k,)
        d = bc @ bc / p_dim
        var = ((windows @ gram) * windows).sum(-1) + 2.0 * (windows @ c) + d  # (N, L)
        inv_sigma = torch.rsqrt(var.clamp_min(0.0) + ln.eps)
        m = self.num_patches
        v = (windows * inv_sigma[..., None]).view(n, m, length // m, k).mean(dim=2)  # (N, M, k)
        s = inv_sigma.view(n, m, length // m).mean(dim=2)  # (N, M)
        out = v @ wc.T + s[..., None] * bc  # (N, M, P)
        return out * ln.weight.to(dt) + ln.bias.to(dt)

    def _scalar_tokens(self, branch: int, stat: Tensor) -> Tensor:
        """Mantis's multi-scale scalar encoder in closed form: ``(N, M, 1) -> (N, M, h)``.

        Scale s maps the scalar x to ``LN_s(x w_s + k_s b_s)``; with ``w_s``, ``b_s`` centred (``wc``,
        ``bc``) its LayerNorm variance is ``(x^2 |wc|^2 + 2 x k_s wc.bc + k_s^2 |bc|^2) / h``, so the
        alpha-weighted sum over scales is ``a @ (wc gamma) + c @ (bc gamma) + alpha @ beta`` with
        ``a_s = alpha_s x / sigma_s`` and ``c_s = alpha_s k_s / sigma_s``: three ``(N M, S) x (S, h)``
        products instead of S LayerNorms over ``(N, M, h)``."""
        enc = self.scalar_encoders[branch]
        dt = stat.dtype
        w = torch.cat([e.w for e in enc.encoders]).to(dt)  # (S, h)
        b = torch.cat([e.b for e in enc.encoders]).to(dt)
        gamma = torch.stack([e.layer_norm.weight for e in enc.encoders]).to(dt)
        beta = torch.stack([e.layer_norm.bias for e in enc.encoders]).to(dt)
        scales = enc.scales.to(dt)
        eps = enc.encoders[0].layer_norm.eps
        h = w.shape[1]
        wc = w - w.mean(dim=1, keepdim=True)
        bc = b - b.mean(dim=1, keepdim=True)
        ww, wb, bb = (wc * wc).sum(1) / h, (wc * bc).sum(1) / h, (bc * bc).sum(1) / h  # (S,)
        x = stat  # (N, M, 1)
        var = x * x * ww + 2.0 * x * scales * wb + (scales * scales) * bb  # (N, M, S)
        inv_sigma = torch.rsqrt(var.clamp_min(0.0) + eps)
        alpha = torch.abs(1.0 / torch.log(stat.abs() @ (1.0 / scales.reshape(1, -1)) + enc.epsilon))  # (N, M, S)
        alpha = alpha / alpha.sum(dim=-1, keepdim=True)
        a = alpha * inv_sigma * x
        c = alpha * inv_sigma * scales
        return a @ (wc * gamma) + c @ (bc * gamma) + alpha @ beta

    def forward(self, x: Tensor) -> Tensor:  # type: ignore[override]
        self._check(x)
        with torch.autocast(x.device.type, enabled=False):
            if x.dtype in (torch.float16, torch.bfloat16) or not x.is_floating_point():
                x = x.float()
            n, length = x.shape
            with torch.no_grad():
                patches = x.view(n, self.num_patches, length // self.num_patches)
                stats = [patches.mean(dim=-1, keepdim=True), patches.std(dim=-1, keepdim=True)]
                diff = F.pad(torch.diff(x, dim=-1), (0, 1))
            pieces = [
                self._conv_ln_patch_mean(_standardize(diff), 0),
                self._conv_ln_patch_mean(_standardize(x), 1),
                self._scalar_tokens(0, stats[0]),
                self._scalar_tokens(1, stats[1]),
            ]
            feats = torch.cat(pieces, dim=-1)
        return self.linear_encoder(feats.to(self.linear_encoder.linear.weight.dtype))

    def tokenize_chunked(
        self, x: Tensor, chunk: int | None, tokenize: Callable[[Tensor], Tensor] | None = None
    ) -> Tensor:
        """Tokenize ``(N, L_0)`` in chunks of ``chunk`` series (a memory knob only) with this module (or
        ``tokenize``: a compiled version of its forward)."""
        tokenize = tokenize or self
        if chunk is None or x.shape[0] <= chunk:
            return tokenize(x)
        return torch.cat([tokenize(x[i : i + chunk]) for i in range(0, x.shape[0], chunk)], dim=0)
