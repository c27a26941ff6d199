"""``chorustic prior-gallery``: figures of the episodic prior; ``chorustic prior-sample``: episode stats."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from chorustic.commands._vocabulary import add_deprecated, add_out_dir
from chorustic.errors import did_you_mean


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "prior-gallery",
        help="write one PNG per rule family of the episodic prior (class prototypes and instances)",
        description="Write <rule>.png for each of the ten rule families (a row per class: the class "
                    "prototype, then a few instances), backgrounds.png (the six background families) and "
                    "difficulty.png (easy vs hard episodes).",
    )
    add_out_dir(p, "folder of the PNG files", default="reports/prior_gallery")
    add_deprecated(p, "--out", "--out-dir", type=Path)
    p.add_argument("--seed", type=int, default=0, help="random seed of the sampled episodes (default: 0)")
    p.add_argument("--rules", nargs="+", default=None, metavar="RULE",
                   help="only these rule families (default: all ten)")
    p.set_defaults(func=_gallery)

    s = subparsers.add_parser(
        "prior-sample",
        help="sample episodes from the prior and print their configuration (omega) as JSON lines",
        description="Sample episodes from the synthetic episodic prior and print, one JSON object per line, each "
                    "episode's configuration (omega: rule family, background, difficulty), its informative "
                    "channels, region, label map and shape (series, channels, length).",
    )
    s.add_argument("-n", "--n-episodes", type=int, default=5, help="number of episodes (default: 5)")
    s.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    s.add_argument("--no-cross-channel-rules", action="store_true",
                   help="the Table 4 prior ablation: multivariate episodes with channel-wise temporal rules")
    s.set_defaults(func=_sample)


def _gallery(args: argparse.Namespace) -> int:
    from chorustic.prior.gallery import write_gallery
    from chorustic.prior.rules import ALL_RULES

    for r in args.rules or []:
        if r not in ALL_RULES:
            print(f"chorustic prior-gallery: unknown rule family {r!r}.{did_you_mean(r, ALL_RULES)} Known: "
                  f"{', '.join(ALL_RULES)}", file=sys.stderr)
            return 2
    for path in write_gallery(args.out_dir, seed=args.seed, rules=args.rules):
        print(path)
    return 0


def _sample(args: argparse.Namespace) -> int:
    import dataclasses

    from chorustic.prior import EpisodePrior, PriorConfig

    cfg = PriorConfig(cross_channel_rules=not args.no_cross_channel_rules)
    prior = EpisodePrior(cfg, seed=args.seed)
    for _ in range(args.n_episodes):
        ep = prior.sample_episode()
        rec = dataclasses.asdict(ep.omega)
        rec.update(informative_channels=list(ep.channels), region=list(ep.region),
                   label_map=ep.label_map.tolist(), shape=list(ep.X.shape))
        print(json.dumps(rec))
    return 0
