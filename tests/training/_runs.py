"""What the training tests share: the shipped checkpoint, a quiet log and a run of about one
second."""

import os

from spades_env.training import config as cfg
from tests.helpers import ROOT

SHIPPED = os.path.join(ROOT, "checkpoints", "shipped", "agent.pt")
QUIET = dict(log=lambda *a: None)


def _tiny(tmp, **over) -> cfg.Args:
    """A run of about one second: 2 games, 4 PPO iterations, no warm start or evaluation."""
    d = dict(name="tiny", num_envs=2, num_steps=56, total_decisions=300, hidden=[16],
             head_hidden=8, bc_teacher="", opponent_share=0.5, pool_bots=["random"],
             pool_every=1, pool_size=2, save_every=1, eval_every=0, final_eval_deals=0,
             eval_opponents=["random"], progress=False, num_minibatches=2, update_epochs=1,
             random_start=0.0, seed=5, runs_dir=str(tmp / "runs"),
             checkpoint_dir=str(tmp / "ck"))
    d.update(over)
    return cfg.from_dict(d)
