"""The final label of an image for a query, from its annotators' judgments: the rule, in one pure function.

Unsure is not a vote: an annotator who cannot tell has not said relevant or not. An image only judged
unsure stays unsure (so it is not exported as relevant, and an expert can look again); otherwise the votes
decide, and an adjudicator's decision overrides them all. A judge who changed their blind vote on a sealed image
(annotator.labels.sealed) has not agreed with the others: they may have learned how the others voted, so the
image waits for the adjudicator whatever the votes now say.
"""

from collections import Counter
from collections.abc import Sequence

from annotator.models import UNDECIDED, Decision, FinalRule, LabelValue


def decide(
    values: Sequence[str], rule: str = FinalRule.MAJORITY, adjudicated: str = "", *, revised: bool = False
) -> tuple[str, str]:
    """(final value, Decision) from the judgments' `values` under `rule`; ("", "") when there is none.

    - no judgment left: no final label, an adjudication's included (the image is back to not yet seen: a
      decision between judgments that are all gone decides nothing);
    - an adjudicated value wins (whatever the judgments say);
    - a blind vote `revised` (changed or withdrawn since): undecided, for the adjudicator;
    - no votes (only unsure): unsure;
    - one vote, or several that agree: that value (single, agreed);
    - split votes: under majority, the value with strictly more votes than any other; a tie, or any split
      under unanimous, is undecided.
    """
    if not values:
        return "", ""
    if adjudicated:
        return adjudicated, Decision.ADJUDICATED
    if revised:
        return UNDECIDED, Decision.UNDECIDED
    votes = Counter(value for value in values if value != LabelValue.UNSURE)
    if not votes:
        return LabelValue.UNSURE, Decision.SINGLE if len(values) == 1 else Decision.AGREED
    if len(votes) == 1:
        ((value, count),) = votes.items()
        return value, Decision.SINGLE if count == 1 else Decision.AGREED
    (first, most), (_, second) = votes.most_common(2)
    if rule == FinalRule.MAJORITY and most > second:
        return first, Decision.MAJORITY
    return UNDECIDED, Decision.UNDECIDED
