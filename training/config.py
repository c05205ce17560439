"""Training configuration: one dataclass, mirrored by ``configs/*.yaml``.

The dataclass ``Args`` is the source of truth (STYLE.md, Configs). A YAML file may set any subset of
its fields; an unknown key is an error naming the key and the known fields. Any field can be
overridden from the command line, either as ``--set name=value`` (repeatable) or as ``--name value``
(values are parsed as YAML scalars, so ``--lr 1e-4``, ``--anneal_lr false``,
``--eval_opponents '[random, easy]'`` all work).
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass, field, fields

import yaml


@dataclass
class Args:
    """Every knob of a training run (``training/ppo_selfplay.py``).

    Units: "decisions" are single actions by one seat (a bid or a card); a hand has 4 bids and 52
    cards, so 56 decisions (more with Blind Nil). Point differences are per hand, in game points.
    """

    # --- run ----------------------------------------------------------------------------------
    name: str = "default"
    """run name: TensorBoard logs go to ``runs/<name>/``, checkpoints to ``checkpoints/<name>/``."""
    seed: int = 1
    """seeds python, numpy and torch once, and every environment and bot (STYLE.md, Determinism)."""
    device: str = "cpu"
    """torch device for the network: ``cpu`` or ``cuda`` (``cuda:0``...)."""
    torch_threads: int = 1
    """``torch.set_num_threads``; 1 keeps runs reproducible and leaves cores for the environments."""
    runs_dir: str = "runs"
    """parent folder of the TensorBoard log folders."""
    checkpoint_dir: str = "checkpoints"
    """parent folder of the checkpoint folders."""
    total_decisions: int = 2_000_000
    """PPO stops after the learner has taken this many decisions (env steps of learner seats)."""
    max_minutes: float = 0.0
    """wall-clock budget for the PPO stage in minutes (0 = none); the run stops cleanly, saves and
    evaluates when it is reached."""
    stop_after_iterations: int = 0
    """stop this process after this many PPO iterations without the final evaluation, as if the
    run were killed (used to test ``--resume``); 0 = off. Not taken from a resumed checkpoint."""

    # --- environment --------------------------------------------------------------------------
    num_envs: int = 64
    """games played side by side; each step is one decision in each game."""
    num_steps: int = 64
    """steps per environment per PPO iteration (rollout length); batch = num_envs * num_steps."""
    rules: str = "standard"
    """rules preset name (``spades_env.Rules.preset``): standard, short or house."""
    hands_per_episode: int = 1
    """hands per episode; the game is cut (truncated) after this many hands."""
    random_start: float = 0.5
    """share of the episodes that start from a random mid-game position instead of 0-0: team
    totals uniform in -150..450 (multiples of 10) and bag counts uniform in 0..bag_limit-1, so the
    policy sees the scores of a whole game and a bag costs on average bag_penalty/bag_limit points,
    as over a long game. Only the scalar env supports it (the vector env starts at 0-0)."""
    reward_scale: float = 0.01
    """reward = (own team hand points - other team hand points) * reward_scale, given to every seat
    at the end of each hand."""
    vector_env: str = "auto"
    """``vector``: the batched torch engine ``spades_env.vector.SpadesVectorEnv`` (needs
    ``random_start: 0`` and ``reward_scale: 0.01``); ``scalar``: the adapter
    ``training.envs.ScalarBatchEnv`` over scalar games; ``auto``: the vector engine on a CUDA
    device when the config allows it, else the scalar adapter (``training.envs.make_env``)."""

    # --- network ------------------------------------------------------------------------------
    hidden: list = field(default_factory=lambda: [512, 256])
    """widths of the shared trunk (ReLU MLP on the 575-float observation)."""
    head_hidden: int = 128
    """width of the hidden layer of each head (bidding, card play, value)."""

    # --- behaviour cloning warm start ---------------------------------------------------------
    bc_teacher: str = "medium"
    """bot imitated in the warm-start stage (empty string = no warm start): behaviour cloning on
    its games, then DAgger rounds (the network plays, the teacher labels every position)."""
    bc_hands: int = 2000
    """hands played by four teacher bots to make the imitation data set."""
    bc_bid_deals: int = 20000
    """extra bidding-only deals (4 teacher bids each, no play): cheap data for the bidding head."""
    bc_epochs: int = 4
    """passes over the teacher's data."""
    bc_dagger_rounds: int = 2
    """DAgger rounds after the first fit: the network plays, the teacher labels (0 = plain
    behaviour cloning)."""
    bc_dagger_hands: int = 2000
    """hands played by the network in each DAgger round."""
    bc_dagger_epochs: int = 2
    """passes over all the data gathered so far after each DAgger round."""
    bc_lr: float = 1e-3
    """Adam learning rate of the warm start."""
    bc_batch: int = 512
    """minibatch size of the warm start."""
    bc_value_coef: float = 0.5
    """weight of the value regression (on the teacher games' hand results) in the warm start."""

    # --- PPO ----------------------------------------------------------------------------------
    lr: float = 2.5e-4
    """Adam learning rate of PPO."""
    anneal_lr: bool = True
    """decay the PPO learning rate linearly to 0 over ``total_decisions``."""
    gamma: float = 1.0
    """discount per decision of the same seat (episodes are short, so 1)."""
    gae_lambda: float = 0.95
    """GAE lambda (Schulman et al. 2016)."""
    num_minibatches: int = 4
    """minibatches per epoch."""
    update_epochs: int = 4
    """passes over each rollout."""
    clip_coef: float = 0.2
    """PPO clipping epsilon (Schulman et al. 2017)."""
    clip_vloss: bool = True
    """clip the value loss as in the PPO reference implementation."""
    ent_coef: float = 0.01
    """entropy bonus coefficient."""
    vf_coef: float = 0.5
    """value loss coefficient."""
    max_grad_norm: float = 0.5
    """gradient norm clip."""
    target_kl: float = 0.0
    """stop the epochs of an iteration early when approx KL exceeds this (0 = never)."""
    norm_adv: bool = True
    """normalise advantages per minibatch."""
    ppo_teacher_coef: float = 0.0
    """weight of an imitation anchor during PPO: cross-entropy to ``bc_teacher``'s action at each
    learner decision (0 = pure PPO)."""
    ppo_teacher_decay: float = 0.5
    """the anchor decays linearly to 0 at this share of ``total_decisions`` (0 = constant)."""

    # --- opponents ----------------------------------------------------------------------------
    opponent_share: float = 0.5
    """share of the games where the other team is played by a pool member instead of the learner."""
    pool_bots: list = field(default_factory=lambda: ["random", "easy", "medium"])
    """scripted bots in the opponent pool (names for ``make_bot``)."""
    pool_bot_share: float = 0.5
    """share of the pool games played against a scripted bot (the rest: a past checkpoint)."""
    pool_size: int = 5
    """past checkpoints kept in the pool (the oldest is dropped)."""
    pool_every: int = 20
    """add a snapshot of the learner to the pool every this many iterations."""

    # --- logging, checkpoints, evaluation -----------------------------------------------------
    save_every: int = 20
    """write ``latest.pt`` every this many iterations (and at the end)."""
    eval_every: int = 50
    """evaluate against ``eval_opponents`` every this many iterations (0 = only at the end)."""
    eval_opponents: list = field(default_factory=lambda: ["random", "easy", "medium"])
    """bots measured against during training and at the end."""
    eval_deals: int = 100
    """duplicate deals per opponent in interval evaluations (each deal is played twice)."""
    final_eval_deals: int = 200
    """duplicate deals per opponent in the final evaluation table."""
    progress: bool = True
    """show a tqdm progress bar."""


_FIELDS = {f.name: f for f in fields(Args)}


def _check_type(name: str, value):
    """Coerce ``value`` to the declared type of field ``name``; raise ValueError if impossible."""
    default = Args().__getattribute__(name)
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ValueError(f"config field {name!r} must be true/false, got {value!r}")
        return value
    if isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                return int(value)
            raise ValueError(f"config field {name!r} must be an integer, got {value!r}")
        return value
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"config field {name!r} must be a number, got {value!r}")
        return float(value)
    if isinstance(default, str):
        if not isinstance(value, str):
            raise ValueError(f"config field {name!r} must be a string, got {value!r}")
        return value
    if isinstance(default, list):
        if not isinstance(value, list):
            raise ValueError(f"config field {name!r} must be a list, got {value!r}")
        return list(value)
    return value


def from_dict(d: dict, base: Args | None = None) -> Args:
    """Build ``Args`` from a dict (e.g. parsed YAML), starting from ``base`` (default ``Args()``).

    Raises:
        ValueError: a key that is not a field of ``Args`` (the message lists the known fields), or
            a value of the wrong type.
    """
    if d is None:
        d = {}
    if not isinstance(d, dict):
        raise ValueError(f"a config must be a mapping of field: value, got {type(d).__name__}")
    unknown = sorted(set(d) - set(_FIELDS))
    if unknown:
        raise ValueError(f"unknown config key(s) {unknown}; known keys: {sorted(_FIELDS)}")
    args = dataclasses.replace(base) if base is not None else Args()
    for k, v in d.items():
        setattr(args, k, _check_type(k, v))
    validate(args)
    return args


def validate(args: Args) -> None:
    """Check value ranges; raise ValueError naming the field."""
    def need(cond, msg):
        if not cond:
            raise ValueError(f"bad config: {msg}")
    need(args.num_envs >= 1, f"num_envs must be >= 1, got {args.num_envs}")
    need(args.num_steps >= 1, f"num_steps must be >= 1, got {args.num_steps}")
    need(args.hands_per_episode >= 1, "hands_per_episode must be >= 1")
    need(0.0 <= args.random_start <= 1.0, "random_start must be in [0, 1]")
    need(args.num_minibatches >= 1, "num_minibatches must be >= 1")
    need(args.update_epochs >= 1, "update_epochs must be >= 1")
    need(0.0 <= args.opponent_share <= 1.0, "opponent_share must be in [0, 1]")
    need(0.0 <= args.pool_bot_share <= 1.0, "pool_bot_share must be in [0, 1]")
    need(args.lr > 0 and args.bc_lr > 0, "learning rates must be > 0")
    need(0.0 <= args.gamma <= 1.0 and 0.0 <= args.gae_lambda <= 1.0, "gamma, gae_lambda in [0, 1]")
    need(args.vector_env in ("auto", "scalar", "vector"), "vector_env must be auto, scalar or vector")
    need(all(isinstance(h, int) and h > 0 for h in args.hidden), "hidden must be positive ints")
    need(args.pool_size >= 0 and args.pool_every >= 1, "pool_size >= 0 and pool_every >= 1")
    need(args.save_every >= 1, "save_every must be >= 1")
    need(min(args.bc_hands, args.bc_bid_deals, args.bc_epochs, args.bc_dagger_rounds,
             args.bc_dagger_hands, args.bc_dagger_epochs) >= 0, "bc_* counts must be >= 0")
    need(args.eval_deals >= 1 and args.final_eval_deals >= 0, "eval_deals >= 1, final >= 0")
    from spades_env import Rules
    Rules.preset(args.rules)


def load_yaml(path: str, base: Args | None = None) -> Args:
    """Read a YAML config file into ``Args``.

    Raises:
        ValueError: unreadable YAML, a non-mapping document, or an unknown key (naming the file).
    """
    try:
        with open(path, encoding="utf-8") as f:
            d = yaml.safe_load(f)
    except yaml.YAMLError as e:
        raise ValueError(f"{path}: not valid YAML: {e}") from None
    try:
        return from_dict(d or {}, base)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None


def parse_value(text: str):
    """Parse a command-line value as a YAML scalar/list (``1e-4`` -> float, ``true`` -> bool)."""
    v = yaml.safe_load(text)
    # YAML 1.1 reads "1e-4" as a string; accept it as a float.
    if isinstance(v, str):
        try:
            return float(v) if any(c in v for c in ".eE") else v
        except ValueError:
            return v
    return v


def apply_overrides(args: Args, pairs: list[str]) -> Args:
    """Apply ``name=value`` overrides (values parsed with ``parse_value``).

    Raises:
        ValueError: a pair without ``=``, an unknown name or a bad value.
    """
    d = {}
    for p in pairs:
        if "=" not in p:
            raise ValueError(f"override {p!r} must look like name=value")
        k, v = p.split("=", 1)
        d[k.strip()] = parse_value(v)
    return from_dict(d, args)


def add_cli(parser: argparse.ArgumentParser) -> None:
    """Add ``--config``, ``--set`` and one ``--<field>`` option per ``Args`` field."""
    parser.add_argument("--config", help="YAML config file (fields of training.config.Args)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="override a config field (repeatable)")
    for name in _FIELDS:
        parser.add_argument(f"--{name}", dest=f"field_{name}", default=None, metavar="VALUE",
                            help=argparse.SUPPRESS)


def args_from_cli(ns: argparse.Namespace, base: Args | None = None) -> Args:
    """Resolve the parsed CLI into ``Args``: base (or YAML file), then ``--<field>``, then ``--set``."""
    args = base if base is not None else Args()
    if getattr(ns, "config", None):
        args = load_yaml(ns.config, args)
    direct = {}
    for name in _FIELDS:
        v = getattr(ns, f"field_{name}", None)
        if v is not None:
            direct[name] = parse_value(v)
    if direct:
        args = from_dict(direct, args)
    if ns.set:
        args = apply_overrides(args, ns.set)
    return args


def to_dict(args: Args) -> dict:
    """Plain dict of the fields (YAML/checkpoint safe: str, int, float, bool, lists)."""
    return dataclasses.asdict(args)


__all__ = ["Args", "from_dict", "load_yaml", "apply_overrides", "add_cli", "args_from_cli",
           "to_dict", "validate", "parse_value"]
