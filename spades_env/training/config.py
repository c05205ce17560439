"""Training configuration: one dataclass, mirrored by ``configs/*.yaml``.

The dataclass ``Args`` is the source of truth: each field is declared once, with its default, its
check (type, range, ``--resume`` policy, start-up test) and its description. A YAML file may set
any subset of its fields; an unknown key is an error naming the key and the known fields. Any field
can be overridden from the command line, either as ``--set name=value`` (repeatable) or as
``--name value``, each name in snake case or kebab case (``--set total-decisions=700``,
``--total_decisions 700``); values are parsed as YAML scalars, so ``--lr 1e-4``,
``--anneal-lr false``, ``--eval-opponents '[random, easy]'`` all work. Options are never
abbreviated (``--gae`` is refused, not read as ``--gae-lambda``).
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass, fields

from spades_env.agents import MAX_PARAMS, MAX_WIDTH, network_params
from spades_env.options import SEED
from spades_env.rules import PRESETS

from .config_fields import (
    BOT_NAMES, FieldCheck, bot_name_error, bots_ready, checked, choice, coerce_one,
    device_error, device_ready, flag, floats, init_ready, ints, path_error, range_error,
    records_ready, rules_error, rules_list_text, rules_text, run_name_error, short_repr,
    teacher_error, type_name,
)
from .config_limits import check_search_work, check_warm_start_work
from .config_yaml import parse_value, safe_yaml


# ============================================================================= field checks
# Each ``Args`` field carries its check (``checked(default, FieldCheck(...))``, the row builders
# and tests in ``config_fields``): its type, its range, what ``--resume`` may do with it and, for
# fields that name files, bots or devices, the start-up check. ``FIELD_CHECKS`` gathers them; the
# same checks apply to YAML files, command-line values, ``from_dict`` dicts and the configs
# stored in checkpoints (``validate``); ``check_ready`` runs the start-up checks before a run
# does any work. The checks that join fields into a search's work are in ``config_limits``; the
# strict YAML reader in ``config_yaml``.

MAX_BATCH = 4_000_000
"""most decisions per rollout (``num_envs * num_steps``): storage needs about 2.4 KB each."""


@dataclass
class Args:
    """Every knob of a training run (``spades_env/training/ppo_selfplay.py``), each declared once:
    its default, its check (``checked(default, FieldCheck)``, gathered in ``FIELD_CHECKS``) and,
    below it, what it does.

    Units: "decisions" are single actions by one seat (a bid or a card); a hand has 4 bids and 52
    cards, so 56 decisions (more with Blind Nil). Point differences are per hand, in game points.
    """

    # --- run ----------------------------------------------------------------------------------
    name: str = checked("default", FieldCheck(
        "str", max_len=128, check=run_name_error, resume="free",
        rule="one folder name: letters, digits, . _ - (no / or ..)"))
    """run name: TensorBoard logs go to ``runs/<name>/``, checkpoints to ``checkpoints/<name>/``."""
    seed: int = checked(SEED, ints(0, 2**63 - 1))
    """seeds python, numpy and torch once, and every environment and bot (the same seed gives the same run)."""
    device: str = checked("cpu", FieldCheck(
        "str", check=device_error, ready=device_ready, resume="free",
        rule="cpu, cuda or cuda:N (present at start-up)"))
    """torch device for the network: ``cpu`` or ``cuda`` (``cuda:0``...)."""
    torch_threads: int = checked(1, ints(1, 1024, resume="free"))
    """``torch.set_num_threads``; 1 keeps runs reproducible and leaves cores for the environments."""
    runs_dir: str = checked("runs", FieldCheck(
        "str", max_len=4096, check=path_error, resume="free", rule="non-empty path"))
    """parent folder of the TensorBoard log folders."""
    checkpoint_dir: str = checked("checkpoints", FieldCheck(
        "str", max_len=4096, check=path_error, resume="free", rule="non-empty path"))
    """parent folder of the checkpoint folders."""
    total_decisions: int = checked(2_000_000, ints(1, 10**13, resume="free"))
    """PPO stops after the learner has taken this many decisions (env steps of learner seats)."""
    max_minutes: float = checked(0.0, floats(0, 1e7, resume="free"))
    """wall-clock budget for the PPO stage in minutes (0 = none); the run stops cleanly, saves and
    evaluates when it is reached."""
    run_minutes: float = checked(0.0, floats(0, 1e7, resume="free"))
    """wall-clock minutes of the whole run to the end of the search-distillation stage (the warm
    start, PPO, the stage; counted across resumes; 0 = none). PPO stops early (``run_minutes``)
    when the minutes used plus the stage's estimate reach it (``distill_stage.stage_minutes``:
    the hands labelled beside PPO so far, at the row speed of the round's fit timed on this host
    when PPO starts); then each round's fit makes fewer than ``distill_epochs`` passes if they
    would still end later (at the mean pass time so far, at least one pass; several rounds share
    the time left evenly). On a slower host PPO gets fewer minutes and the fit keeps its passes.
    The labels (``distill_minutes``) are not cut, and the final evaluation comes after it. With
    no stage it changes nothing; a run resumed with more PPO, rounds or passes needs a larger
    value (or 0)."""
    stop_after_iterations: int = checked(0, ints(0, 10**9, resume="process"))
    """stop this process after this many PPO iterations without the final evaluation, as if the
    run were killed (used to test ``--resume``); 0 = off. Not taken from a resumed checkpoint."""

    # --- environment --------------------------------------------------------------------------
    num_envs: int = checked(64, ints(1, 1 << 20))
    """games played side by side; each step is one decision in each game."""
    num_steps: int = checked(64, ints(1, 1 << 20))
    """steps per environment per PPO iteration (rollout length); batch = num_envs * num_steps."""
    rules: str = checked("standard", FieldCheck(
        "str", check=rules_error, max_len=400, normalize=rules_text,
        rule=f"a rules mapping: a preset ({', '.join(PRESETS)}), a preset and fields "
             f"(house,min_team_bid=4) or {{preset: ..., field: value}}"))
    """the rules (``spades_env.Rules.parse``): a preset name (``standard``, ``short``, ``house``,
    ``suicide``, ``mirror``, ``whiz``), a preset and fields (``house,min_team_bid=4``) or a mapping
    (``{preset: house, min_team_bid: 4}``); docs/rules.md. With ``rules_mix``: the rules of the
    evaluations."""
    rules_mix: list = checked([], FieldCheck(
        "list[str]", check=rules_error, max_len=8, normalize=rules_list_text,
        rule="a list of at most 8 rules mappings, each as ``rules`` takes it"))
    """train one network under several rule sets: the games are split evenly among them (the
    first ``num_envs / k`` games under the first, and so on; each episode starts under its
    game's rules) and the warm start's hands likewise; evaluations stay under ``rules``. The
    observation's rules piece tells the network which rules a decision is under. Empty (the
    default): every game under ``rules``."""
    hands_per_episode: int = checked(1, ints(1, 10_000))
    """hands per episode; the game is cut (truncated) after this many hands."""
    random_start: float = checked(0.5, floats(0, 1))
    """share of the episodes that start from a random mid-game position instead of 0-0: team
    totals uniform in -150..450 (multiples of 10) and bag counts uniform in 0..bag_limit-1, so the
    policy sees the scores of a whole game and a bag costs on average bag_penalty/bag_limit points,
    as over a long game. Only the scalar env supports it (the vector env starts at 0-0)."""
    reward_scale: float = checked(0.01, floats(0, 1e3, lo_open=True))
    """reward = (own team hand points - other team hand points) * reward_scale, given to every seat
    at the end of each hand."""
    vector_env: str = checked("auto", choice("auto", "scalar", "vector"))
    """``vector``: the batched torch engine ``spades_env.vector.SpadesVectorEnv`` (needs
    ``random_start: 0`` and ``reward_scale: 0.01``); ``scalar``: the adapter
    ``training.envs.ScalarBatchEnv`` over scalar games; ``auto``: the vector engine on a CUDA
    device when the config allows it, else the scalar adapter (``training.envs.make_env``)."""

    # --- network ------------------------------------------------------------------------------
    hidden: list = checked([512, 256], FieldCheck("list[int]", 1, MAX_WIDTH, max_len=16))
    """widths of the shared trunk (ReLU MLP on the 575-float observation)."""
    head_hidden: int = checked(128, ints(1, MAX_WIDTH))
    """width of the hidden layer of each head (bidding, card play, value)."""
    critic_hidden: list = checked([], FieldCheck("list[int]", 1, MAX_WIDTH, max_len=16))
    """widths of the privileged critic (``spades_env.agents.model``: a value network that also reads the
    other three hands, used only for the advantages during training; the acting policy never
    reads it). Empty: no privileged critic, the value head is the critic."""

    # --- behaviour cloning warm start ---------------------------------------------------------
    init_from: str = checked("", FieldCheck(
        "str", max_len=4096, ready=init_ready, rule="'' (none) or the path of a checkpoint"))
    """start from the network of this checkpoint (same network shape) instead of the warm-start
    stage, e.g. a run's ``warmstart.pt`` ('' = train the warm start)."""
    bc_records: str = checked("", FieldCheck(
        "str", max_len=4096, ready=records_ready,
        rule="'' (none) or the path of a teacher-records .npz file"))
    """teacher game records (``training.teacher_records``, e.g.
    ``checkpoints/records/hard_records.npz``) replayed and added to the warm-start data ('' = none)."""
    bc_teacher: str = checked("medium", FieldCheck(
        "str", max_len=4096, check=teacher_error, ready=bots_ready,
        rule="'' (none) or a bot: " + BOT_NAMES))
    """bot imitated in the warm-start stage (empty string = no warm start): behaviour cloning on
    its games, then DAgger rounds (the network plays, the teacher labels every position)."""
    bc_hands: int = checked(2000, ints(0, 10**8))
    """hands played by four teacher bots to make the imitation data set."""
    bc_bid_deals: int = checked(20000, ints(0, 10**9))
    """extra bidding-only deals (4 teacher bids each, no play): cheap data for the bidding head."""
    bc_epochs: int = checked(4, ints(0, 100_000))
    """passes over the teacher's data."""
    bc_dagger_rounds: int = checked(2, ints(0, 10_000))
    """DAgger rounds after the first fit: the network plays, the teacher labels (0 = plain
    behaviour cloning)."""
    bc_dagger_hands: int = checked(2000, ints(0, 10**8))
    """hands played by the network in each DAgger round."""
    bc_dagger_epochs: int = checked(2, ints(0, 100_000))
    """passes over all the data gathered so far after each DAgger round."""
    bc_lr: float = checked(1e-3, floats(0, 10, lo_open=True))
    """Adam learning rate of the warm start."""
    bc_batch: int = checked(512, ints(1, 1 << 24))
    """minibatch size of the warm start."""
    bc_value_coef: float = checked(0.5, floats(0, 1e6))
    """weight of the value regression (on the teacher games' hand results) in the warm start."""
    bc_threads: int = checked(0, ints(0, 256, resume="free"))
    """torch threads of the warm start's fit (0: ``torch_threads``; nothing else runs then)."""
    bc_precision: str = checked("fp32", choice("auto", "fp32", "bf16", resume="free"))
    """arithmetic of the warm start's fit on the CPU, as ``distill_precision``
    (``spades_env.agents.model.fit_precision``; the one used: ``progress["warmstart"]``)."""

    # --- PPO ----------------------------------------------------------------------------------
    lr: float = checked(2.5e-4, floats(0, 10, lo_open=True))
    """Adam learning rate of PPO."""
    anneal_lr: bool = checked(True, flag())
    """decay the PPO learning rate linearly to 0 over ``total_decisions``."""
    gamma: float = checked(1.0, floats(0, 1))
    """discount per decision of the same seat (episodes are short, so 1)."""
    gae_lambda: float = checked(0.95, floats(0, 1))
    """GAE lambda (Schulman et al. 2016)."""
    num_minibatches: int = checked(4, ints(1, 1 << 24))
    """minibatches per epoch."""
    update_epochs: int = checked(4, ints(1, 100_000))
    """passes over each rollout."""
    clip_coef: float = checked(0.2, floats(0, 100, lo_open=True))
    """PPO clipping epsilon (Schulman et al. 2017)."""
    clip_vloss: bool = checked(True, flag())
    """clip the value loss as in the PPO reference implementation."""
    ent_coef: float = checked(0.01, floats(0, 1e6))
    """entropy bonus coefficient."""
    vf_coef: float = checked(0.5, floats(0, 1e6))
    """value loss coefficient."""
    max_grad_norm: float = checked(0.5, floats(0, 1e9, lo_open=True))
    """gradient norm clip."""
    target_kl: float = checked(0.0, floats(0, 1e6))
    """stop the epochs of an iteration early when approx KL exceeds this (0 = never)."""
    norm_adv: bool = checked(True, flag())
    """normalise advantages per minibatch."""
    bid_loss_weight: float = checked(1.0, floats(0, 1e3, lo_open=True))
    """weight of the bidding decisions (action ids 52 and up) in the policy loss; card play keeps
    weight 1. A bid is 4 of a hand's 56 decisions but decides much of its score (1 = plain PPO)."""
    ppo_teacher_coef: float = checked(0.0, floats(0, 1e6))
    """weight of an imitation anchor during PPO: cross-entropy to ``bc_teacher``'s action at each
    learner decision (0 = pure PPO)."""
    ppo_teacher_decay: float = checked(0.5, floats(0, 1000))
    """the anchor decays linearly to 0 at this share of ``total_decisions`` (0 = constant)."""

    # --- opponents ----------------------------------------------------------------------------
    opponent_share: float = checked(0.5, floats(0, 1))
    """share of the games where the other team is played by a pool member instead of the learner."""
    pool_bots: list = checked(["random", "easy", "medium"], FieldCheck(
        "list[str]", max_len=32, check=bot_name_error, ready=bots_ready,
        rule="list of at most 32 bots: " + BOT_NAMES))
    """scripted bots in the opponent pool (names for ``make_bot``)."""
    pool_search_samples: list = checked([], FieldCheck(
        "list[int]", 1, 100_000, max_len=2, rule="[] or [card, bid]: two integers in [1, 100000]"))
    """``[card, bid]``: deals drawn per card and per bid by the ``hard`` and ``insane`` bots of the
    pool (``samples`` / ``bid_samples`` of ``spades_env.bots.pimc.PIMCBot``); empty = the levels'
    own (100/48 and 400/240). Fewer deals make a cheaper search opponent to train against: at
    [30, 24] ``hard`` takes about 8 ms per decision here instead of about 20. Evaluation always
    uses the levels as they are."""
    pool_bot_share: float = checked(0.5, floats(0, 1))
    """share of the pool games played against a scripted bot (the rest: a past checkpoint)."""
    pool_size: int = checked(5, ints(0, 1000))
    """past checkpoints kept in the pool (the oldest is dropped)."""
    pool_every: int = checked(20, ints(1, 10**9))
    """add a snapshot of the learner to the pool every this many iterations."""
    pool_anchor: bool = checked(False, flag())
    """keep the network as it was when PPO started (the warm start) in the pool for the whole run,
    beside the ``pool_size`` most recent snapshots."""
    bag_cost: float = checked(0.0, floats(0, 1000))
    """reward: each bag a team takes costs this many points and the bag penalty reached in the
    hand is left out (``training.teacher_records.team_points``); 0 = the plain hand score. Over a
    game to 500 a bag costs about 10 points (10 bags = -100)."""

    # --- logging, checkpoints, evaluation -----------------------------------------------------
    save_every: int = checked(20, ints(1, 10**9, resume="free"))
    """write ``latest.pt`` every this many iterations (and at the end)."""
    eval_every: int = checked(50, ints(0, 10**9, resume="free"))
    """evaluate against ``eval_opponents`` every this many iterations (0 = only at the end)."""
    eval_opponents: list = checked(["random", "easy", "medium"], FieldCheck(
        "list[str]", max_len=32, check=bot_name_error, ready=bots_ready, resume="free",
        rule="list of at most 32 bots: " + BOT_NAMES))
    """bots measured against during training and at the end."""
    eval_deals: int = checked(100, ints(1, 10**7, resume="free"))
    """duplicate deals per opponent in interval evaluations (each deal is played twice)."""
    slow_eval_deals: int = checked(20, ints(1, 10**7, resume="free"))
    """duplicate deals against the search bots ``hard`` and ``insane`` (tens of ms a decision) in
    interval and final evaluations, instead of ``eval_deals``/``final_eval_deals``."""
    final_eval_deals: int = checked(200, ints(0, 10**7, resume="free"))
    """duplicate deals per opponent in the final evaluation table."""

    # --- search distillation after PPO (training.distill) --------------------------------------
    distill_minutes: float = checked(0.0, floats(0, 10_000, resume="free"))
    """labelling budget (wall-clock minutes) of a search-distillation stage after PPO: the PPO
    network plays hands against the ``hard`` bot's search, which values every card decision; the
    network (widened per ``distill_hidden``) then learns those values (``training.distill``). The
    result is ``distilled.pt`` in the run's checkpoint folder, and it is the network of the final
    evaluation. 0 = no stage."""
    distill_rounds: int = checked(1, ints(1, 100, resume="free"))
    """rounds of the search-distillation stage (expert iteration): round k starts from round
    k-1's network, plays its own fresh hands (seed ``seed + k - 1``) and labels for
    ``distill_minutes``. With more than one round, round k writes ``distilled_round{k}.pt`` and
    ``distilled.pt`` is a copy of the last. Only the first round widens (``distill_hidden``)."""
    distill_hidden: list = checked([], FieldCheck(
        "list[int]", 1, MAX_WIDTH, max_len=16, resume="free"))
    """trunk widths of the distilled network, each at least the PPO network's (``[]`` = the same;
    ``spades_env.agents.model.widen`` keeps the PPO network's function)."""
    distill_head_hidden: int = checked(0, ints(0, MAX_WIDTH, resume="free"))
    """head width of the distilled network (0 = the PPO network's)."""
    distill_samples: int = checked(40, ints(1, 100_000, resume="free"))
    """search deals per labelled card decision (``hard`` plays with 100)."""
    distill_epochs: int = checked(12, ints(1, 1000, resume="free"))
    """passes over the labels when distilling (fewer when ``run_minutes`` ends first)."""
    distill_lr: float = checked(1e-3, floats(1e-7, 1.0, resume="free"))
    """the fit's Adam step size, falling linearly to 0 over its passes."""
    distill_batch: int = checked(512, ints(1, 65_536, resume="free"))
    """rows a step of the fit (2048 with ``distill_lr`` 2e-3: a pass 1.5x as fast on 2 cores as
    512, as the larger products use the cores better, and as good a pass)."""
    distill_drop_flat: bool = checked(False, flag(resume="free"))
    """leave out of the fit the card rows whose candidates the search valued all alike (a pass
    10% shorter on the main job's labels, and a lower held-out regret in the same passes)."""
    distill_regret_weight: float = checked(0.0, floats(0, 1000, resume="free"))
    """weight of the expected regret beside the cross-entropy of each card row of the fit
    (``training.distill.distill``'s ``regret_weight``: the network's expected loss in points by
    the search's values; 0: the cross-entropy alone)."""
    distill_workers: int = checked(2, ints(1, 64, resume="free"))
    """labelling processes."""
    distill_bid_deals: int = checked(50000, ints(0, 1_000_000, resume="free"))
    """fresh deals whose bids (the PPO network's own) are rows of the distillation set, so the
    bids stay where PPO left them (``training.distill_targets.bid_rows``)."""
    distill_chunks: int = checked(1000, ints(1, 100_000, resume="free"))
    """most label chunks per round (and per network of the labels beside PPO): a round labels
    until ``distill_minutes`` have passed or this many chunks are done, whichever comes first (a
    cluster config fixes the hands, not the time)."""
    distill_chunk_hands: int = checked(50, ints(1, 10_000, resume="free"))
    """hands per label chunk (a chunk is the unit of work of a worker or a Ray task, and what a
    stopped round keeps)."""
    distill_teacher: str = checked("hard", choice("hard", "expert", resume="free"))
    """the search that labels each round (``training.labels.TEACHERS``): ``hard`` (uniform
    deals), or ``expert`` built on the round's own starting network, so each round's teacher is
    stronger than the last round's."""
    distill_bid_samples: int = checked(0, ints(0, 100_000, resume="free"))
    """deals per bid of the bid search when labelling: the bids then learn the search's values
    (0: the bids are not labelled)."""
    distill_threads: int = checked(1, ints(1, 256, resume="free"))
    """torch threads of a distillation round's fit (after its labels, when the cores are free;
    1 gives the same weights on any host)."""
    distill_precision: str = checked("fp32", choice("auto", "fp32", "bf16", resume="free"))
    """arithmetic of a round's fit (``spades_env.agents.model.fit_precision``): ``fp32``,
    ``bf16`` (the forward passes in bfloat16 under autocast) or ``auto`` (bf16 where the CPU has
    native bfloat16 products: twice the passes a minute on the development host, held-out
    figures alike; the one used: the round's ``precision``)."""
    distill_beside_ppo: int = checked(0, ints(0, 64))
    """label processes that run beside PPO (0: none): from PPO iteration
    ``distill_beside_from`` to PPO's end they label hands played by that iteration's network
    (``label_policy.pt`` in the checkpoint folder) on cores PPO leaves idle
    (``training.labelling.LabelsBeside``; with ``distill_beside_every``, newer networks' too),
    and round 1 of the search-distillation stage learns those labels, plus ``distill_minutes``
    more of the last of those networks (0 allowed: none more). On a 2-core host PPO takes one
    core: 1 here labels on the other at no cost in wall time."""
    distill_beside_from: int = checked(0, ints(0, 10**7))
    """the PPO iteration at which the labels beside PPO start, and whose network plays their
    hands first (0: PPO's first, the warm start's network)."""
    distill_beside_every: int = checked(0, ints(0, 10**7))
    """PPO iterations between two networks of the labels beside PPO (0: one network, that of
    ``distill_beside_from``, to PPO's end): at ``distill_beside_from + k * every`` the label
    processes go on with the network of that iteration (``label_policy_itN.pt``), into a folder
    of its own (``labels_beside_itN``, seed ``seed + 1000 k``), so the later hands are closer to
    the ones the final network plays; round 1 learns the chunks of every network."""
    ray_address: str = checked("", FieldCheck(
        "str", max_len=4096, resume="free", rule='"" (local processes), auto or HOST:PORT'))
    """a Ray cluster (``auto`` or ``HOST:PORT``) for the search-distillation stage's labels
    (``training.labelling.produce_labels``) and the evaluations (``training.evaluate.
    duplicate_match``); "" runs them here (labels in ``distill_workers`` processes)."""
    progress: bool = checked(True, flag(resume="free"))
    """show a tqdm progress bar."""


_FIELDS = {f.name: f for f in fields(Args)}
if any("check" not in f.metadata for f in _FIELDS.values()):
    raise TypeError("every Args field is declared with its check: checked(default, FieldCheck)")
FIELD_CHECKS: dict[str, FieldCheck] = {name: f.metadata["check"] for name, f in _FIELDS.items()}
"""The check of every ``Args`` field, by name, in declaration order (from the fields' metadata)."""


def _coerce(name: str, value):
    """Coerce ``value`` to field ``name``'s type (the ``kind`` of its check).

    Raises:
        ValueError: a value of the wrong type, naming the field.
    """
    row = FIELD_CHECKS[name]
    if row.normalize is not None:
        value = row.normalize(value)
    try:
        if row.kind.startswith("list["):
            if not isinstance(value, (list, tuple)):
                raise TypeError(row.kind)
            return [coerce_one(row.kind[5:-1], v) for v in value]
        return coerce_one(row.kind, value)
    except (TypeError, OverflowError):
        raise ValueError(f"config field {name!r} must be {type_name(row.kind)}, got "
                         f"{short_repr(value)}") from None


def check_field(name: str, value):
    """Check one field's value against its row; return it coerced to the field's type (ints
    given as integral floats become ints, numbers floats, tuples lists).

    Raises:
        ValueError: ``bad config: NAME must be RULE, got VALUE (WHY)``.
    """
    row = FIELD_CHECKS.get(name)
    if row is None:
        return value
    try:
        value = _coerce(name, value)
    except ValueError as e:
        raise ValueError(f"bad config: {e}") from None
    why = range_error(row, value)
    if why and row.kind in ("str", "list[str]"):
        raise ValueError(f"bad config: {name} = {short_repr(value)}: {why}")
    if why:
        raise ValueError(f"bad config: {name} must be {row.describe()}, got {short_repr(value)} "
                         f"({why})")
    return value


def validate(args: Args) -> None:
    """Check every field against its row of ``FIELD_CHECKS``, then the limits that join fields
    (rollout size, network size).

    Raises:
        ValueError: ``bad config: ...`` naming the field, the allowed values and the value given.
    """
    for name in _FIELDS:
        check_field(name, getattr(args, name))
    if len(args.pool_search_samples) == 1:  # the row bounds the length (at most 2), not 0-or-2
        raise ValueError(f"bad config: pool_search_samples must be "
                         f"{FIELD_CHECKS['pool_search_samples'].describe()}, got "
                         f"{args.pool_search_samples} (one number)")
    batch = args.num_envs * args.num_steps
    if batch > MAX_BATCH:
        raise ValueError(f"bad config: num_envs * num_steps = {batch} decisions per rollout "
                         f"(about {batch * 2.4e3 / 2**30:.0f} GiB of storage); at most "
                         f"{MAX_BATCH}")
    params = network_params(args.hidden, args.head_hidden, args.critic_hidden)
    if params > MAX_PARAMS:
        raise ValueError(f"bad config: hidden {args.hidden} with head_hidden {args.head_hidden} "
                         f"makes a network of {params} parameters; at most {MAX_PARAMS}")
    check_search_work(args)


def has_distill_stage(args: Args) -> bool:
    """Whether the run ends with a search-distillation stage: ``distill_minutes`` of labels, or
    labels made beside PPO (``distill_beside_ppo``)."""
    return args.distill_minutes > 0 or args.distill_beside_ppo > 0


def check_ready(args: Args) -> None:
    """The start-up checks of a run, before any work: every row's ``ready`` test (the device is
    present, every ``checkpoint:PATH`` bot in ``bc_teacher``, ``pool_bots`` and
    ``eval_opponents`` loads, ...), after ``validate``.

    Raises:
        ValueError: ``bad config: NAME: WHY`` for the first failing field.
    """
    validate(args)
    for name, row in FIELD_CHECKS.items():
        if row.ready is not None:
            why = row.ready(getattr(args, name))
            if why:
                raise ValueError(f"bad config: {name}: {why}")
    # checks that join fields, made here so a refused run creates no folder
    if args.vector_env == "vector" and (args.random_start != 0
                                        or abs(args.reward_scale - 0.01) > 1e-12):
        raise ValueError(f"bad config: vector_env: vector cannot be used: the batched engine "
                         f"starts every game at 0-0 and scales rewards by 0.01: it needs "
                         f"random_start 0 (got {args.random_start}) and reward_scale 0.01 (got "
                         f"{args.reward_scale})")
    check_warm_start_work(args)
    if args.rules_mix and len(args.rules_mix) > args.num_envs:
        raise ValueError(f"bad config: rules_mix: {len(args.rules_mix)} rule sets need at least "
                         f"as many games side by side (num_envs is {args.num_envs})")
    if args.distill_minutes > 0 or args.distill_beside_ppo > 0:
        # what the stage after PPO would refuse, refused before PPO
        from spades_env import Rules
        if args.rules_mix and any(Rules.parse(r) != Rules() for r in args.rules_mix):
            raise ValueError(f"bad config: distill_minutes/distill_beside_ppo: the "
                             f"search-distillation stage labels "
                             f"standard-rules hands; this run's rules_mix is {args.rules_mix!r} "
                             f"(set distill_minutes: 0 and distill_beside_ppo: 0)")
        if Rules.parse(args.rules) != Rules():
            raise ValueError(f"bad config: distill_minutes/distill_beside_ppo: the "
                             f"search-distillation stage labels "
                             f"standard-rules hands; this run's rules are {args.rules!r} (set "
                             f"distill_minutes: 0 and distill_beside_ppo: 0)")
        if args.distill_minutes == 0 and args.distill_rounds > 1:
            raise ValueError(f"bad config: distill_minutes: rounds after the first label their "
                             f"own hands for distill_minutes; 0 allows one round only (the "
                             f"labels beside PPO), got distill_rounds {args.distill_rounds}")
        if 0 < args.distill_minutes < 1e-3:
            raise ValueError(f"bad config: distill_minutes must be 0 (no stage) or at least "
                             f"0.001, got {args.distill_minutes}")
        if args.seed + args.distill_rounds - 1 > 2**62:
            raise ValueError(f"bad config: seed: the search-distillation stage draws its labels "
                             f"from seeds up to 2**62 (seed + distill_rounds - 1), got "
                             f"{args.seed} + {args.distill_rounds - 1}")
    if args.ray_address:
        from spades_env.ray_cluster import check_address
        try:
            check_address(args.ray_address)
        except ValueError as e:
            raise ValueError(f"bad config: ray_address: {e}") from None
    if has_distill_stage(args) and (args.distill_hidden or args.distill_head_hidden):
        from types import SimpleNamespace

        from spades_env.agents.model import check_widen
        ppo = SimpleNamespace(hidden=list(args.hidden), head_hidden=args.head_hidden,
                              critic_hidden=list(args.critic_hidden))
        try:
            check_widen(ppo, args.distill_hidden or args.hidden,
                        args.distill_head_hidden or args.head_hidden)
        except ValueError as e:
            raise ValueError(f"bad config: distill_hidden/distill_head_hidden: {e}") from None
    if args.init_from:
        from spades_env.agents.checkpoint import check_model, load_checkpoint
        from spades_env.observation import OBS_SIZE
        kw = check_model(load_checkpoint(args.init_from), args.init_from)
        want = {"hidden": list(args.hidden), "head_hidden": args.head_hidden,
                "obs_size": OBS_SIZE, "critic_hidden": list(args.critic_hidden)}
        # a network of an earlier observation version is widened (agents.model.widen_input)
        if {**{"critic_hidden": []}, **kw, "obs_size": OBS_SIZE} != want:
            raise ValueError(f"bad config: init_from: {args.init_from}: its network {kw} is not "
                             f"the config's (hidden {args.hidden}, head_hidden {args.head_hidden}, "
                             f"critic_hidden {args.critic_hidden}, obs_size {OBS_SIZE})")


def field_table() -> str:
    """Markdown table of every field: type, allowed values, ``--resume`` policy, default."""
    out = ["| field | type | allowed values | on --resume | default |",
           "|---|---|---|---|---|"]
    for name, row in FIELD_CHECKS.items():
        default = getattr(Args(), name)
        policy = {"fixed": "kept (change refused)", "free": "may change",
                  "process": "not taken from the checkpoint"}[row.resume]
        out.append(f"| {name} | {row.kind} | {row.describe()} | {policy} | {default!r} |")
    return "\n".join(out)


def resume_args(saved, given: Args, source: str = "checkpoint", log=print) -> Args:
    """The config of a resumed run: the checkpoint's config ``saved`` (a dict, checked against the
    table) with the fields where ``given`` differs applied when their row allows it.

    ``"process"`` fields always come from ``given``; ``"free"`` fields that differ are applied and
    each change is logged (``resume: total_decisions 4000 -> 20000``); a ``"fixed"`` field that
    differs (network sizes, PPO and environment settings...) is refused by name.

    Raises:
        ValueError: a stored config that is not a valid config (naming ``source``), or changed
            fixed fields (all of them named, with the saved and the given value).
    """
    try:
        base = from_dict(saved)
    except ValueError as e:
        raise ValueError(f"{source}: stored config: {e}") from None
    out = dataclasses.replace(base)
    refused, changed = [], []
    for name in _FIELDS:
        new, old = getattr(given, name), getattr(base, name)
        policy = FIELD_CHECKS[name].resume
        if policy == "process":
            setattr(out, name, new)
        elif new != old:
            if policy == "free":
                setattr(out, name, new)
                changed.append(f"{name} {old!r} -> {new!r}")
            else:
                refused.append(f"{name} (saved {short_repr(old)}, given {short_repr(new)})")
    if refused:
        raise ValueError(f"{source}: cannot change {', '.join(refused)} on --resume: the run "
                         f"continues with its saved values; start a new run (another --name) to "
                         f"train with others")
    validate(out)
    for c in changed:
        log(f"resume: override {c}")
    return out


def resume_base(saved, source: str = "checkpoint") -> Args:
    """The checkpoint's config as ``Args``, ``"process"`` fields reset to their defaults: the base
    that command-line options of ``--resume`` are applied to.

    Raises:
        ValueError: a stored config that is not a valid config (naming ``source``).
    """
    try:
        base = from_dict(saved)
    except ValueError as e:
        raise ValueError(f"{source}: stored config: {e}") from None
    fresh = Args()
    for name, row in FIELD_CHECKS.items():
        if row.resume == "process":
            setattr(base, name, getattr(fresh, name))
    return base


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
    unknown = sorted((k for k in d if not (isinstance(k, str) and k in _FIELDS)), key=repr)
    if unknown:
        raise ValueError(f"unknown config key(s) {unknown}; known keys: {sorted(_FIELDS)}")
    args = dataclasses.replace(base) if base is not None else Args()
    for k, v in d.items():
        setattr(args, k, _coerce(k, v))
    validate(args)
    return args


MAX_CONFIG_BYTES = 1 << 20
"""largest YAML config file read (a config is a few KB)."""


def load_yaml(path: str, base: Args | None = None) -> Args:
    """Read a YAML config file into ``Args``.

    Raises:
        ValueError: a missing or unreadable file (a folder, a FIFO, no permission, not UTF-8, over
            ``MAX_CONFIG_BYTES``), invalid YAML, an alias (``*name``), a key set twice, a
            non-mapping document, an unknown key or a bad value; the message names the file.
    """
    from spades_env.readers import read_regular
    raw = read_regular(path, "config", MAX_CONFIG_BYTES)  # a folder, a FIFO (would hang)...
    try:
        d = safe_yaml(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a text (UTF-8) file") from None
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    try:
        return from_dict(d if d is not None else {}, base)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None


def apply_overrides(args: Args, pairs: list[str]) -> Args:
    """Apply ``name=value`` overrides (values parsed with ``parse_value``); a name is the field's
    (``total_decisions``) or its kebab-case spelling (``total-decisions``), as on the command line.

    Raises:
        ValueError: a pair without ``=``, an unknown name (as given) or a bad value.
    """
    d = {}
    for p in pairs:
        if "=" not in p:
            raise ValueError(f"override {p!r} must look like name=value")
        k, v = p.split("=", 1)
        k = k.strip()
        if k not in _FIELDS and k.replace("-", "_") in _FIELDS:
            k = k.replace("-", "_")
        d[k] = parse_value(v)
    return from_dict(d, args)


def add_cli(parser: argparse.ArgumentParser) -> None:
    """Add ``--config``, ``--set`` and one ``--<field>`` option per ``Args`` field
    (``--total-decisions``, also spelled ``--total_decisions``), and turn off the abbreviation of
    ``parser``'s options: with two spellings a field, a prefix that stops before the first ``-``
    would match both (``--gae``: ``--gae-lambda``, ``--gae_lambda``), and a new field would change
    what a prefix means; argparse then refuses any option not written out in full."""
    parser.allow_abbrev = False
    parser.add_argument("--config", help="YAML config file (fields of spades_env.training.config.Args)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="override a config field (repeatable; NAME in snake or kebab case)")
    for name in _FIELDS:  # kebab case; the field's own snake-case spelling is accepted too
        spellings = dict.fromkeys([f"--{name.replace('_', '-')}", f"--{name}"])
        parser.add_argument(*spellings, dest=f"field_{name}", default=None, metavar="VALUE",
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


__all__ = ["Args", "has_distill_stage", "from_dict", "load_yaml", "apply_overrides", "add_cli",
           "args_from_cli",
           "to_dict", "validate", "parse_value", "safe_yaml", "FieldCheck", "FIELD_CHECKS",
           "check_field", "check_search_work", "check_warm_start_work",
           "check_ready", "field_table", "network_params", "resume_args", "resume_base",
           "MAX_WIDTH", "MAX_PARAMS", "MAX_BATCH"]
