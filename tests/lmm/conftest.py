import pytest

from tests.lmm.server import ChatServer, model_answer


@pytest.fixture
def chat_server():
    with ChatServer() as server:
        yield server


@pytest.fixture
def model(chat_server, settings):
    chat_server.answer = model_answer
    settings.QUIRE_LMM_BASE_URL = chat_server.base_url
    settings.QUIRE_LMM_MODEL = "tiny-vlm"
    settings.QUIRE_LMM_MAX_RETRIES = 0
    return chat_server
