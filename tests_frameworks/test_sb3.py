"""SB3 (sb3-contrib MaskablePPO) and Gymnasium vector envs: each example's --smoke trains, and its
learner beats random and its own untrained start in the arena."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from conftest import assert_beats, run_example

import spades_env  # noqa: F401

HANDS = 300  # duplicate pairs in the arena check (the examples' default)
INIT_HANDS = 100  # duplicate pairs against the untrained start (the examples' default)


def test_sb3_maskable_ppo_smoke_beats_random(tmp_path):
    r = run_example("sb3_maskable_ppo.py", "--smoke", tmp_path=tmp_path)
    assert_beats(r, HANDS)
    assert_beats(r, INIT_HANDS, "vs_init")
    assert np.isfinite(r["plain_eval_mean"])  # maskless evaluate_policy plays the hands out


def test_gymnasium_vector_smoke_beats_random(tmp_path):
    r = run_example("gymnasium_vector.py", "--smoke", tmp_path=tmp_path)
    assert_beats(r, HANDS)
    assert_beats(r, INIT_HANDS, "vs_init")


def test_the_check_against_the_untrained_start_fails_without_training(tmp_path):
    # 0 updates: the learner is its start; a deterministic policy against itself in duplicate
    # pairs (the same deal, sides swapped) scores exactly 0 per pair
    r = run_example("gymnasium_vector.py", "--updates", "0", "--eval-hands", "10",
                    "--init-hands", "20", tmp_path=tmp_path)
    assert r["vs_init"]["pair_diffs"] == [0] * 20
    with pytest.raises(AssertionError, match="does not beat untrained"):
        assert_beats(r, 20, "vs_init")


def test_gymnasium_vector_next_step_mode_runs(tmp_path):
    r = run_example("gymnasium_vector.py", "--autoreset", "next", "--updates", "5",
                    "--eval-hands", "10", "--init-hands", "0", tmp_path=tmp_path)
    assert r["arena"]["pairs"] == 10 and r["vs_init"] is None


def test_make_vec_env_and_masks_through_wrappers():
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
    from stable_baselines3.common.env_util import make_vec_env
    venv = make_vec_env("Spades-v1", n_envs=2, seed=0,
                        env_kwargs={"partner": "random", "opponents": "random"})
    assert is_masking_supported(venv)
    venv.reset()
    masks = get_action_masks(venv)
    assert masks.shape == (2, 68) and masks.any(axis=1).all()
    # masks follow the game of each sub-env
    games = venv.get_attr("game")
    for m, g in zip(masks, games):
        assert np.flatnonzero(m).tolist() == g.legal_actions()


def test_predict_without_masks_does_not_end_every_hand():
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.evaluation import evaluate_policy
    env = gym.make("SpadesHand-v1", partner="random", opponents="random",
                   illegal_action="random_legal")
    model = MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=64, seed=0)
    lengths = evaluate_policy(model, env, n_eval_episodes=3, return_episode_rewards=True)[1]
    assert lengths == [14, 14, 14]  # bid + 13 cards each: no hand ended by an illegal move
    term_env = gym.make("SpadesHand-v1", partner="random", opponents="random")
    lengths = evaluate_policy(model, term_env, n_eval_episodes=3, return_episode_rewards=True)[1]
    assert max(lengths) < 14  # the default (terminate) ends a hand at the first illegal pick


def test_sb3_example_counts_the_replaced_moves_on_seeded_deals(tmp_path):
    # an untrained model predicting without masks picks many illegal moves; the example used to
    # print the count of the last episode, which evaluate_policy's final reset had zeroed
    # ("replaced: 0"), and its two evaluations played unseeded deals
    runs = []
    for k in range(2):
        (tmp_path / str(k)).mkdir()
        runs.append(run_example("sb3_maskable_ppo.py", "--untrained", "--eval-hands", "2",
                                "--init-hands", "0", tmp_path=tmp_path / str(k)))
    r = runs[0]
    assert r["plain_moves"] == 20 * 14  # 20 hands of a bid and 13 cards: all played out
    assert 0 < r["plain_replaced"] <= r["plain_moves"]
    for key in ("masked_eval_mean", "plain_eval_mean", "plain_replaced"):
        assert runs[1][key] == r[key], key


def test_an_episode_ended_by_an_illegal_action_warns_once(monkeypatch):
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.evaluation import evaluate_policy

    from spades_env import single_agent
    monkeypatch.setattr(single_agent, "_warned_illegal_end", False)
    env = gym.make("SpadesHand-v1", partner="random", opponents="random")
    model = MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=64, seed=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lengths = evaluate_policy(model, env, n_eval_episodes=3, return_episode_rewards=True)[1]
    ours = [w for w in caught if "an illegal action ended the episode" in str(w.message)]
    assert max(lengths) < 14  # three hands ended by an illegal pick ...
    assert len(ours) == 1 and issubclass(ours[0].category, UserWarning)  # ... one warning
    assert "illegal_action='random_legal'" in str(ours[0].message)
    # replacing illegal picks is not an ended episode: no warning
    monkeypatch.setattr(single_agent, "_warned_illegal_end", False)
    env = gym.make("SpadesHand-v1", partner="random", opponents="random",
                   illegal_action="random_legal")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        evaluate_policy(model, env, n_eval_episodes=2)
    assert not [w for w in caught if "illegal action ended" in str(w.message)]
    assert env.unwrapped.illegal_total > 0 and env.unwrapped.illegal_count <= 14


def test_readme_sb3_snippet_runs():
    """README.md's Stable-Baselines3 snippet, run as written; its masked prediction is legal."""
    import os
    import re
    readme = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")
    with open(readme, encoding="utf-8") as f:
        code = [b for b in re.findall(r"^```python\n(.*?)^```", f.read(), re.M | re.S)
                if "MaskablePPO" in b]
    assert len(code) == 1
    scope: dict = {}
    exec(compile(code[0], "README.md", "exec"), scope)
    mask = scope["env"].unwrapped.action_masks()
    assert mask[int(scope["action"])]
