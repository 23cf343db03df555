"""Synthetic event streams for the approximate-matching evaluation (the paper's Section 6).

Two kinds, each a list of (symbol, tag):

- `tweet_stream`: tweet-like letter streams for the buy-point pattern of the
  approximate-matching paper's Example 1. Each tweet is `S`, a ticker (`a` for $AAPL, `o`
  for another), a keyword (bullish chart pattern `b d w r`, good news `g e u`, or a neutral
  word `n`) and `E`; all letters of a tweet carry the tweet's timestamp. Buy-point episodes
  (two or more bullish $AAPL tweets, then two or more good-news ones) are planted among
  background tweets; letters are dropped and neutral letters inserted at random.
- `sensor_stream`: the most likely symbol per timestep of an RFID-like trace of a person
  moving Hallway -> Door -> Room -> Door -> Hallway, with misread timesteps.
"""

from __future__ import annotations

import random

BUY_PATTERN = "( S a [b d w r] E ){2,} ( S a [g e u] E ){2,}"
BULLISH, NEWS, NEUTRAL = "bdwr", "geu", "n"
SENSOR_PATTERN = "Hallway Door Room{3,} Door Hallway"
SENSOR_SYMBOLS = ("Hallway", "Door", "Room")


def tweet_stream(n_tweets: int, seed: int, *, p_episode: float = 0.04, p_drop: float = 0.08,
                 p_noise: float = 0.1, p_apple: float = 0.4) -> list[tuple[str, int]]:
    rng = random.Random(seed)
    tweets: list[tuple[str, str]] = []
    while len(tweets) < n_tweets:
        if rng.random() < p_episode:
            for topic in (BULLISH, NEWS):
                tweets += [("a", rng.choice(topic)) for _ in range(rng.choice((2, 2, 3)))]
        else:
            ticker = "a" if rng.random() < p_apple else "o"
            tweets.append((ticker, rng.choice(BULLISH + NEWS + NEUTRAL * 4)))
    events: list[tuple[str, int]] = []
    tag = 0
    for ticker, word in tweets[:n_tweets]:
        tag += rng.choice((1, 1, 2, 3))
        for letter in ("S", ticker, word, "E"):
            if rng.random() >= p_drop:
                events.append((letter, tag))
            if rng.random() < p_noise:
                events.append((NEUTRAL, tag))
    return events


def sensor_stream(n_steps: int, seed: int, *, p_misread: float = 0.1) -> list[tuple[str, int]]:
    """Most likely location per timestep; visits are Hallway, Door, Room..., Door."""
    rng = random.Random(seed)
    truth: list[str] = []
    while len(truth) < n_steps:
        truth += ["Hallway"] * rng.randint(2, 12)
        if rng.random() < 0.5:  # walks past without entering
            continue
        truth += ["Door"] * rng.randint(1, 2) + ["Room"] * rng.randint(2, 6)
        truth += ["Door"] * rng.randint(1, 2)
    symbols = [s if rng.random() >= p_misread else rng.choice(SENSOR_SYMBOLS)
               for s in truth[:n_steps]]
    return [(s, t) for t, s in enumerate(symbols)]
