import pytest

from tests.lmm.server import ChatServer


@pytest.fixture
def chat_server():
    with ChatServer() as server:
        yield server
