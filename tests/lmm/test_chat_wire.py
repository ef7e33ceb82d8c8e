"""The chat-completions scorer against a real HTTP server on 127.0.0.1 (tests/lmm/server.py): what goes
over the wire, each failure's outcome, and the answer cache."""

import base64
import hashlib
import math
import time

import pytest

from lmm.chat import ChatScorer, ImageInput, ModelUnavailable
from lmm.models import Answer
from lmm.scoring import score_images
from tests.lmm.server import completion

pytestmark = pytest.mark.django_db

JPEG = b"\xff\xd8\xff\xe0 not really a jpeg, but bytes the client must carry unchanged \x00\x01"


def scorer(server, **options) -> ChatScorer:
    return ChatScorer(base_url=server.base_url, model="tiny-vlm", **{"timeout": 5, "max_retries": 0, **options})


def image(seed: int) -> ImageInput:
    return ImageInput(JPEG + bytes([seed]), "image/jpeg")


def test_the_request_is_inquires_and_the_answer_is_scored(chat_server):
    chat_server.answer = lambda request: (200, completion([("Yes", -0.2), ("No", -1.9)]), {})
    client = scorer(chat_server)
    answer = client.ask("Black Skimmer performing skimming", image(1))
    assert answer.score == pytest.approx(math.exp(-0.2) / (math.exp(-0.2) + math.exp(-1.9)))
    request = chat_server.requests[0]
    assert request["_path"] == "/v1/chat/completions"
    assert (request["model"], request["max_tokens"], request["temperature"]) == ("tiny-vlm", 1, 0)
    assert request["logprobs"] is True and request["top_logprobs"] == 20
    text, picture = request["messages"][0]["content"]
    assert text["text"].startswith('Does this picture show exactly "Black Skimmer performing skimming"?\n')
    header, encoded = picture["image_url"]["url"].split(",", 1)
    assert header == "data:image/jpeg;base64" and base64.b64decode(encoded) == JPEG + b"\x01"
    assert (client.usage.requests, client.usage.prompt_tokens, client.usage.completion_tokens) == (1, 1000, 1)


@pytest.mark.parametrize(
    "top, score, doubtful",
    [
        ([("No", -0.05), ("no", -3.0)], 0.0, False),  # "Yes" absent
        ([("Yes", -0.05), ("yes", -3.0)], 1.0, False),  # "No" absent
        ([("I", math.log(0.5)), ("Yes", math.log(0.2)), ("No", math.log(0.2))], 0.5, True),
    ],
)
def test_inquires_edge_cases_over_the_wire(chat_server, top, score, doubtful):
    chat_server.answer = lambda request: (200, completion(top), {})
    client = scorer(chat_server)
    answer = client.ask("q", image(2))
    assert answer.score == pytest.approx(score) and answer.doubtful is doubtful
    assert client.usage.doubtful == int(doubtful)


def test_a_429_is_retried_after_its_retry_after(chat_server):
    def answer(request):
        if len(chat_server.requests) == 1:
            return 429, {"error": {"message": "slow down", "type": "rate_limit"}}, {"Retry-After": "0"}
        return 200, completion([("Yes", -0.1), ("No", -2.0)]), {}

    chat_server.answer = answer
    assert scorer(chat_server, max_retries=2).ask("q", image(3)).score > 0.5
    assert len(chat_server.requests) == 2


@pytest.mark.parametrize(
    "answer, message",
    [
        (lambda r: (429, {"error": {"message": "slow down"}}, {"Retry-After": "0"}), "kept answering 429"),
        (lambda r: (200, b"{not json", {}), "unreadable"),
        (
            lambda r: (
                200,
                {
                    **completion([]),
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": "Yes"}, "finish_reason": "stop"}
                    ],
                },
                {},
            ),
            "without the first token's top logprobs",
        ),
        (lambda r: (400, {"error": {"message": "image too large"}}, {}), "answered 400: image too large"),
        (lambda r: (time.sleep(1.5), (200, completion([("Yes", 0.0)]), {}))[1], "did not answer in time"),
    ],
    ids=["429-always", "malformed-json", "no-logprobs", "400", "timeout"],
)
def test_each_failure_is_a_sentence_and_nothing_is_stored(chat_server, answer, message):
    chat_server.answer = answer
    client = scorer(chat_server, timeout=0.5, max_retries=1)
    with pytest.raises(ModelUnavailable, match=message):
        score_images(client, "q", {1: image(4)})
    assert not Answer.objects.exists()


def test_an_unreachable_server_says_so():
    client = ChatScorer(base_url="http://127.0.0.1:9/v1", model="m", timeout=2, max_retries=0)
    with pytest.raises(ModelUnavailable, match="cannot be reached"):
        client.ask("q", image(5))


def test_no_configuration_says_what_to_set():
    with pytest.raises(ModelUnavailable, match="QUIRE_LMM_BASE_URL"):
        ChatScorer(base_url="", model="")


def test_cached_answers_cost_no_request_and_a_failure_keeps_the_answers_before_it(chat_server):
    bad = hashlib.sha256(JPEG + bytes([9])).hexdigest()

    def answer(request):
        data = base64.b64decode(request["messages"][0]["content"][1]["image_url"]["url"].split(",", 1)[1])
        if hashlib.sha256(data).hexdigest() == bad:
            return 500, {"error": {"message": "model crashed"}}, {}
        return 200, completion([("Yes", -0.3), ("No", -1.4)]), {}

    chat_server.answer = answer
    images = {image_id: image(image_id) for image_id in range(1, 10)}  # image 9 fails
    with pytest.raises(ModelUnavailable, match="answered 500"):
        score_images(scorer(chat_server, concurrency=3), "q", images)
    assert Answer.objects.count() == 8  # every answer that came back is kept
    chat_server.answer = lambda request: (200, completion([("Yes", -0.3), ("No", -1.4)]), {})
    before = len(chat_server.requests)
    scored = score_images(scorer(chat_server), "q", images)
    assert (scored.asked, scored.cached, len(chat_server.requests) - before) == (1, 8, 1)
    again = score_images(scorer(chat_server), "q", images)
    assert (again.asked, again.cached, len(chat_server.requests) - before) == (0, 9, 1)
    assert set(again.answers) == set(images)
    other_prompt = score_images(scorer(chat_server, prompt="Is this {query}? Yes or No."), "q", {1: images[1]})
    assert other_prompt.asked == 1  # a different prompt is a different question
