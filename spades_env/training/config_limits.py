"""The checks of the training config that join fields into the work of a search bot
(``spades_env.bots.work``): the opponent pool's search bots and the distillation teacher
(``check_search_work``, part of ``config.validate``), and the warm start's teacher
(``check_warm_start_work``, at a run's start). Each takes the config (``config.Args``) and
raises ``ValueError`` (``bad config: FIELDS: ...``) with the estimate and the limit.
"""

from __future__ import annotations

__all__ = ["check_search_work", "check_warm_start_work"]


def check_search_work(args) -> None:
    """The search bots' options together (``spades_env.bots.work``): the pool's ``hard`` and
    ``insane`` with ``pool_search_samples``, and the distillation teacher with
    ``distill_samples`` / ``distill_bid_samples`` (one chunk of ``distill_chunk_hands`` hands,
    ``distill_workers`` at once), within ``LIMITS`` (docs/bots.md, Limits).

    Raises:
        ValueError: ``bad config: FIELDS: ...`` with the estimate and the limit.
    """
    from spades_env.bots.work import check_task, check_work, search_work
    if args.pool_search_samples:
        card, bid = (int(x) for x in args.pool_search_samples)
        for name in sorted({b for b in args.pool_bots if b in ("hard", "insane")}):
            try:
                check_work(name, search_work(card, bid, infer_bids=name == "insane"))
            except ValueError as e:
                raise ValueError(f"bad config: pool_search_samples: {e}") from None
    if args.distill_minutes > 0 or args.distill_beside_ppo > 0:
        expert = args.distill_teacher == "expert"
        widths = list(args.distill_hidden or args.hidden)
        head = args.distill_head_hidden or args.head_hidden
        net = {"row_bytes": 4 * (2 * sum(widths) + head + 52), "card_rows": True,
               "policy": True} if expert else None  # the network the round starts from
        est = search_work(args.distill_samples, max(1, args.distill_bid_samples),
                          infer_bids=expert, network=net)
        try:
            check_task(f"distill_teacher {args.distill_teacher}", est, args.distill_chunk_hands,
                       4, 1 if args.ray_address else min(args.distill_workers,
                                                         args.distill_chunks))
        except ValueError as e:
            raise ValueError(f"bad config: distill_samples/distill_bid_samples/"
                             f"distill_chunk_hands: {e}") from None


def check_warm_start_work(args) -> None:
    """The warm start's teacher (``bc_teacher`` a search bot: ``hard``, ``insane``, ``expert``)
    on its ``bc_hands`` hands and ``bc_dagger_rounds`` x ``bc_dagger_hands`` DAgger hands, every
    seat's decisions searched, within one unit of work (``bots.work.check_task``; the stage is
    not resumable); nothing is checked when ``init_from`` replaces the stage.

    Raises:
        ValueError: ``bad config: bc_teacher/bc_hands/...: ...`` with the estimate and the limit.
    """
    if not args.bc_teacher or args.init_from or args.bc_hands <= 0:
        return
    from spades_env.bots import make_bot
    from spades_env.bots.work import check_task
    work = getattr(make_bot(args.bc_teacher, seed=0), "work", None)
    if work is None:
        return
    hands = args.bc_hands + args.bc_dagger_rounds * args.bc_dagger_hands
    try:
        check_task(f"bc_teacher {args.bc_teacher}", work, hands, 4, 1)
    except ValueError as e:
        raise ValueError(f"bad config: bc_teacher/bc_hands/bc_dagger_rounds/bc_dagger_hands: "
                         f"{e}") from None
