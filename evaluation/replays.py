"""What `manage.py simulate_labeling` replays an oracle annotator over: the settings checked, the ground
truth and its rankers (the team world, the synthetic world, or qrels over the real collection), and the
medians table it prints. The command is a thin shell over these and evaluation.simulation."""

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from annotator.facade import recall_estimate
from annotator.models import Query
from evaluation import benchmark_sim, certification, simulation, worlds
from evaluation.inputs import InputError, read_qrels
from search.facade import LABEL_ONLY_STRATEGIES, next_batch


class BadReplay(ValueError):
    """Settings or ground truth a replay cannot run on; the text says what to fix."""


@dataclass
class Grounds:
    """The ground truth of a replay and how each of its queries is ranked and estimated."""

    positives: dict[int, set[int]]
    rankers: dict[int, tuple[Any, Any]]
    hard: Any
    kinds: Any
    source: str


def strategies_of(chosen: list[str] | None) -> list[str]:
    """The strategies to replay, the first the baseline; BadReplay for one an oracle annotator cannot replay."""
    strategies = list(dict.fromkeys(chosen or ["text", "feedback"]))
    # An oracle annotator only labels: the strategies that need example images cannot be replayed.
    if unknown := [name for name in strategies if name not in LABEL_ONLY_STRATEGIES]:
        raise BadReplay(f"--strategy takes {', '.join(LABEL_ONLY_STRATEGIES)}, not {', '.join(unknown)}.")
    return strategies


CHECKS: tuple[tuple[str, Callable[[Any], bool], str], ...] = (
    ("batch", lambda value: 1 <= value <= 1000, "--batch must be 1 to 1,000 labels."),
    ("target", lambda value: 0 < value <= 1, "--target must be a share above 0 and at most 1, e.g. 0.95."),
    ("max_labels", lambda value: 1 <= value <= 100_000, "--max-labels must be 1 to 100,000."),
    (
        "noise",
        lambda value: 0 <= value < 0.5,
        "--noise is the annotator's error rate: 0 or more and below 0.5, e.g. 0.05.",
    ),
)


def check_settings(options: dict[str, Any]) -> None:
    """BadReplay naming the first setting out of its range."""
    for name, fits, sentence in CHECKS:
        if not fits(options[name]):
            raise BadReplay(sentence)


def grounds(options: dict[str, Any]) -> Grounds:
    """The ground truth the options name, with its rankers; BadReplay for a bad file or setting."""
    if options["team_world"]:
        found = team_world(options)
    elif options["synthetic"]:
        found = synthetic(options)
    else:
        found = qrels(options)
    if options["noise"]:
        found.source += f", annotator wrong {options['noise']:.0%} of the time"
    return found


def team_world(options: dict[str, Any]) -> Grounds:
    kinds = tuple(kind.strip() for kind in options["kinds"].split(",") if kind.strip())
    if not 1 <= options["per_kind"] <= 50:
        raise BadReplay("--per-kind must be 1 to 50 queries.")
    try:
        world = worlds.team_world(kinds=kinds, per_kind=options["per_kind"], seed=options["seed"])
    except ValueError as error:
        raise BadReplay(f"--kinds: {error}") from None
    source = f"team world ({', '.join(kinds)}; seed {options['seed']})"
    return Grounds(world.positives, world_rankers(world, options), world.hard, world.kinds, source)


def certification_settings(options: dict[str, Any]) -> "certification.Settings":
    """The stopping-rule simulation's settings from the command's options; BadReplay naming one out of range."""
    if not options["team_world"]:
        raise BadReplay("--completeness runs on the team world: add --team-world.")
    if not 0 < options["target"] < 1:
        raise BadReplay("--target must be a share above 0 and below 1 for --completeness, e.g. 0.9.")
    if not 0 < options["confidence"] < 1:
        raise BadReplay("--confidence must be a share above 0 and below 1, e.g. 0.95.")
    if not 0 <= options["depth"] <= 20_000:
        raise BadReplay("--depth must be 0 (the tool's default frame) to 20,000 images of each ranking.")
    if not 1 <= options["seeds"] <= 1000:
        raise BadReplay("--seeds must be 1 to 1,000 worlds.")
    return certification.Settings(
        noise=options["noise"], target=options["target"], confidence=options["confidence"], depth=options["depth"],
        batch=options["batch"], max_review=options["max_labels"], estimate=not options["no_estimate"],
    )  # fmt: skip


def seeded_team_worlds(options: dict[str, Any]) -> list[tuple[int, worlds.World]]:
    """(seed, team world) for --seeds seeds from --seed on."""
    kinds = tuple(kind.strip() for kind in options["kinds"].split(",") if kind.strip())
    if not 1 <= options["per_kind"] <= 50:
        raise BadReplay("--per-kind must be 1 to 50 queries.")
    try:
        return [
            (seed, worlds.team_world(kinds=kinds, per_kind=options["per_kind"], images=30_000, seed=seed))
            for seed in range(options["seed"], options["seed"] + options["seeds"])
        ]
    except ValueError as error:
        raise BadReplay(f"--kinds: {error}") from None


def synthetic(options: dict[str, Any]) -> Grounds:
    try:
        world = worlds.synthetic_world(
            queries=options["synthetic_queries"], separation=options["separation"], seed=options["seed"]
        )
    except ValueError as error:
        raise BadReplay(str(error)) from None
    source = f"synthetic world (separation {options['separation']}, seed {options['seed']})"
    return Grounds(world.positives, world_rankers(world, options), world.hard, None, source)


def world_rankers(world: Any, options: dict[str, Any]) -> dict[int, tuple[Any, Any]]:
    return {
        query_id: (
            simulation.world_ranker(world, query_id),
            None if options["no_estimate"] else simulation.world_estimator(world, query_id),
        )
        for query_id in world.positives
    }


def qrels(options: dict[str, Any]) -> Grounds:
    """Qrels over the real collection, ranked by the search engine."""
    try:
        truth = read_qrels(options["qrels"], options["queries"])
    except InputError as error:
        raise BadReplay(str(error)) from None
    texts = {query_id: row.get("query_text", "") for query_id, row in truth.queries.items()}
    if not texts:
        texts = dict(Query.objects.filter(pk__in=truth.positives).values_list("id", "text"))
    wanted = [query_id for query_id, found in truth.positives.items() if found]
    if missing := [query_id for query_id in wanted if not texts.get(query_id, "").strip()]:
        raise BadReplay(
            f"No text for queries {', '.join(map(str, missing[:5]))}: give --queries (an INQUIRE queries CSV "
            "with query_text) or import the queries first."
        )
    rankers = {
        query_id: (
            collection_ranker(texts[query_id]),
            None if options["no_estimate"] else collection_estimator(texts[query_id]),
        )
        for query_id in wanted
    }
    positives = {query_id: truth.positives[query_id] for query_id in wanted}
    return Grounds(positives, rankers, None, None, str(options["qrels"]))


def collection_ranker(text: str) -> Callable[..., list[int]]:
    def ranked(
        strategy: str,
        relevant: Sequence[int],
        not_relevant: Sequence[int],
        exclude: Sequence[int],
        k: int,
        recent: Sequence[tuple[int, bool]] = (),
    ) -> list[int]:
        hits = next_batch(
            strategy=strategy,
            text=text,
            relevant_ids=relevant,
            not_relevant_ids=not_relevant,
            recent=recent,
            k=k,
            exclude_image_ids=exclude,
        )
        return [hit.image_id for hit in hits]

    return ranked


def collection_estimator(text: str) -> Callable[[Sequence[int], Sequence[int]], float | None]:
    def estimate(relevant: Sequence[int], not_relevant: Sequence[int]) -> float | None:
        result = recall_estimate(text, relevant, not_relevant)
        return None if result is None else result.recall

    return estimate


def format_medians(result: dict[str, Any]) -> str:
    """The medians table, one line per group and strategy, with each strategy's worst ratio to the first."""
    target = round(100 * result["settings"]["target"])
    lines = [
        f"{'group':<9} {'strategy':<10} {f'labels to {target}%':>14} {'vs first':>9} {'worst':>6} {'>1.1x':>6} "
        f"{'missed':>7} {'est. error':>11}"
    ]
    for group, strategies in result["medians"].items():
        for strategy, row in strategies.items():
            labels = "–" if row["median_labels"] is None else f"{row['median_labels']:.0f}"
            ratio, worst = row.get("median_ratio"), row.get("worst_ratio")
            error = row["median_estimate_error"]
            lines.append(
                f"{group:<9} {strategy:<10} {labels:>14} {'' if ratio is None else f'{ratio:.2f}':>9} "
                f"{'' if worst is None else f'{worst:.2f}':>6} {row.get('worse_than_baseline', ''):>6} "
                f"{row['missed']:>7} {'' if error is None else f'{error:.2f}':>11}"
            )
    return "\n".join(lines)


def claims_settings(options: dict[str, Any]) -> "benchmark_sim.Settings":
    """The claims' simulation settings (--completeness --claims QUERIES); BadReplay naming one out of range."""
    if not options["team_world"]:
        raise BadReplay("--completeness runs on the team world: add --team-world.")
    if not 1 <= options["claims"] <= 2000:
        raise BadReplay("--claims must be 1 to 2,000 queries.")
    if not 0 < options["target"] < 1 or not 0 < options["confidence"] < 1:
        raise BadReplay("--target and --confidence must be shares above 0 and below 1, e.g. 0.9 and 0.95.")
    if not 1 <= options["seeds"] <= 1000:
        raise BadReplay("--seeds must be 1 to 1,000 worlds.")
    if not 0 <= options["noise"] < 0.5:
        raise BadReplay("--noise must be a share from 0 up to 0.5, e.g. 0.05.")
    return benchmark_sim.Settings(
        noise=options["noise"], target=options["target"], confidence=options["confidence"], batch=options["batch"]
    )


def seeded_inquire_worlds(options: dict[str, Any]) -> Iterator[tuple[int, worlds.World]]:
    """(seed, INQUIRE-shaped world of --claims queries) for --seeds seeds from --seed on, one at a time."""
    for seed in range(options["seed"], options["seed"] + options["seeds"]):
        yield seed, worlds.inquire_world(queries=options["claims"], seed=seed)
