"""Two schedules for the logits of the deployment ensemble; they compute the same numbers.

``naive``: every member (label shift m, RSSC draw a) runs the whole model on the whole episode, as the
official code does (16 slot encodings per row per draw, duplicated channels included; the task level
once per member).

``shared``: what does not depend on labels is computed once per RSSC draw and reused by every label
shift: the signal level (each distinct channel of a group encoded once, identical groups and identical
draws shared; for one channel a row is encoded once in total), the column stage (context bank once,
rows in chunks) and the row stage. Only the ICL transformer runs per (distinct) label shift, with the
context once and the queries in chunks, several shifts per call. On CUDA the task level runs under
AMP (fp16 autocast), as the official pipeline does.

Both return the un-shifted logits of every member, ``(M_pi, M_R, n_query, K)``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence

import torch
from torch import Tensor
from tqdm.auto import tqdm

from chorustic.inference.ensemble import shift_labels, unshift_logits
from chorustic.inference.oom import BatchSizes

__all__ = ["SCHEDULES", "naive_member_logits", "shared_member_logits"]

SCHEDULES = ("shared", "naive")


def _autocast(device: torch.device, use_amp: bool):
    if use_amp and device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.float16)
    return contextlib.nullcontext()


def _unique(rows: Sequence) -> tuple[list, list[int]]:
    uniq: list = []
    index: list[int] = []
    for r in rows:
        if r not in uniq:
            uniq.append(r)
        index.append(uniq.index(r))
    return uniq, index


@torch.no_grad()
def shared_member_logits(
    model,
    X: Tensor,
    y_context: Tensor,
    offsets: Sequence[int],
    group_idx: Tensor,
    *,
    num_classes: int,
    batch: BatchSizes | None = None,
    temperature: float = 0.9,
    use_amp: bool = True,
    progress: bool = False,
) -> Tensor:
    """Member logits ``(M_pi, M_R, n_query, K)`` of one episode under the shared schedule.

    ``X``: ``(1, T, C, L)`` (context rows first), ``y_context``: ``(n_ctx,)`` labels 0..K-1,
    ``group_idx``: ``(1, M_R, G, S)``.
    """
    batch = batch or BatchSizes()
    X, _ = model.prepare_inputs(X)
    device = X.device
    y = torch.as_tensor(y_context, device=device).long().reshape(-1)
    n, k = y.numel(), num_classes
    draws, draw_of = _unique([tuple(group_idx[0, a].reshape(-1).tolist()) for a in range(group_idx.shape[1])])
    shifts, shift_of = _unique([int(o) % k for o in offsets])
    gi = torch.stack([group_idx[0, draw_of.index(i)] for i in range(len(draws))])[None].to(device)

    H = model.encode_signal(
        X, gi, row_chunk=batch.signal_rows, group_chunk=batch.group_chunk
    )  # (1, U, T, d_h)
    y_tables = torch.stack([shift_labels(y, off, k) for off in shifts])  # (J, n)
    per_draw = []
    bar = tqdm(total=len(draws) * len(shifts), desc="ChorusTIC members", disable=not progress, leave=False)
    for u in range(len(draws)):
        with _autocast(device, use_amp):
            R = model.row_representations(H[:, u], n, row_chunk=batch.task_rows)  # (1, T, d_u)
        outs = []
        for j0 in range(0, len(shifts), batch.icl_tables):
            yj = y_tables[j0 : j0 + batch.icl_tables]
            with _autocast(device, use_amp):
                logits = model.icl_logits(
                    R.expand(yj.shape[0], -1, -1),
                    yj,
                    num_classes=k,
                    query_chunk=batch.task_rows,
                    temperature=temperature,
                )
            outs.extend(unshift_logits(logits[j].float(), shifts[j0 + j]) for j in range(yj.shape[0]))
            bar.update(yj.shape[0])
        per_draw.append(torch.stack(outs))  # (J, q, K)
    bar.close()
    table = torch.stack(per_draw, dim=1)  # (J, U, q, K)
    m_idx = torch.tensor(shift_of, device=table.device)
    a_idx = torch.tensor(draw_of, device=table.device)
    return table[m_idx][:, a_idx]


@torch.no_grad()
def naive_member_logits(
    model,
    X: Tensor,
    y_context: Tensor,
    offsets: Sequence[int],
    group_idx: Tensor,
    *,
    num_classes: int,
    members: Iterable[tuple[int, int]] | None = None,
    temperature: float = 0.9,
    progress: bool = False,
) -> Tensor:
    """Member logits under the naive schedule: ``(M_pi, M_R, n_query, K)``, or ``(len(members), n_query, K)``
    for an explicit list of ``(m, a)`` members."""
    y = torch.as_tensor(y_context).long().reshape(-1)
    n_draws = group_idx.shape[1]
    todo = (
        list(members)
        if members is not None
        else [(m, a) for m in range(len(offsets)) for a in range(n_draws)]
    )
    outs = []
    for m, a in tqdm(todo, desc="ChorusTIC naive members", disable=not progress, leave=False):
        off = int(offsets[m]) % num_classes
        yl = shift_labels(y, off, num_classes)[None].to(X.device)
        logits = model(X, yl, group_idx=group_idx[:, a], dedupe=False, temperature=temperature)[0]
        outs.append(unshift_logits(logits.float(), off))
    stacked = torch.stack(outs)
    if members is not None:
        return stacked
    return stacked.view(len(offsets), n_draws, *stacked.shape[1:])
