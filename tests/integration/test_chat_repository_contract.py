"""One contract for the chat store, run against DynamoDB (moto) and PostgreSQL (embedded, RLS)."""

from __future__ import annotations

import base64
import json

import pytest
from ulid import ULID

from tests.support.harness import make_settings
from worldmm.chat.cursor import encode_cursor
from worldmm.chat.dynamo import DynamoChatRepository, dynamo_table_definitions
from worldmm.chat.port import ChatRepository
from worldmm.chat.postgres import PostgresChatRepository
from worldmm.chat.settings import ChatSettings
from worldmm.errors import BadRequest, Forbidden

pytestmark = pytest.mark.integration

ALICE = "user-alice"
BOB = "user-bob"


@pytest.fixture(params=["dynamodb", "postgres"])
def repo(request: pytest.FixtureRequest) -> ChatRepository:
    """The chat store under test: moto DynamoDB tables as the SAM template declares them, or PostgreSQL."""
    if request.param == "dynamodb":
        import boto3

        request.getfixturevalue("aws")
        settings = make_settings(worldmm_profile="aws")
        client = boto3.client("dynamodb", region_name="us-east-1")
        for definition in dynamo_table_definitions(ChatSettings.of(settings)):
            client.create_table(**definition)
        return DynamoChatRepository(ChatSettings.of(settings), client)
    return PostgresChatRepository(ChatSettings.of(request.getfixturevalue("settings")), request.getfixturevalue("db"))


def _fill(repo: ChatRepository, user_id: str, chat_id: str, count: int) -> list[str]:
    return [repo.save_message(user_id, chat_id, "user", f"message {i}").message_id for i in range(count)]


def test_create_chat_is_owned_by_its_creator_only(repo: ChatRepository) -> None:
    # GIVEN a chat Alice created
    chat_id = repo.create_chat(ALICE)
    # THEN it is hers, not Bob's, and an unknown id is nobody's
    assert repo.chat_owned_by(ALICE, chat_id)
    assert not repo.chat_owned_by(BOB, chat_id)
    assert not repo.chat_owned_by(ALICE, "00000000-0000-4000-8000-000000000000")


def test_save_message_generates_increasing_ulids_server_side(repo: ChatRepository) -> None:
    # GIVEN a chat
    chat_id = repo.create_chat(ALICE)
    # WHEN messages are saved in quick succession
    saved = [repo.save_message(ALICE, chat_id, "user", f"q{i}") for i in range(10)]
    # THEN each id is a ULID, strictly increasing, and the messages carry their chat and an ISO time
    ids = [m.message_id for m in saved]
    assert all(str(ULID.from_str(i)) == i for i in ids)
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert all(m.chat_id == chat_id and m.created_at.endswith("Z") for m in saved)


def test_save_turn_writes_a_new_chat_with_its_question_and_answer_together(repo: ChatRepository) -> None:
    # WHEN a first turn is saved (no chat yet), then a second into the same chat
    chat_id = repo.save_turn(ALICE, None, "where is my mug?", "On the kitchen counter.")
    assert repo.save_turn(ALICE, chat_id, "and my keys?", "By the door.") == chat_id
    # THEN the chat is Alice's, titled by the first question, with both turns in order (newest first)
    assert repo.chat_owned_by(ALICE, chat_id)
    page = repo.get_messages(ALICE, chat_id)
    assert [(m.role, m.content) for m in page.messages] == [
        ("assistant", "By the door."),
        ("user", "and my keys?"),
        ("assistant", "On the kitchen counter."),
        ("user", "where is my mug?"),
    ]
    [summary] = repo.list_chats(ALICE).conversations
    assert summary.title and "mug" in summary.title


def test_save_turn_into_another_users_chat_is_forbidden_and_writes_neither_message(repo: ChatRepository) -> None:
    chat_id = repo.save_turn(ALICE, None, "mine?", "yes")
    with pytest.raises(Forbidden):
        repo.save_turn(BOB, chat_id, "intruder", "answer")
    assert [m.content for m in repo.get_messages(ALICE, chat_id).messages] == ["yes", "mine?"]


def test_save_message_to_another_users_chat_is_forbidden_and_writes_nothing(repo: ChatRepository) -> None:
    # GIVEN Alice's chat with one message
    chat_id = repo.create_chat(ALICE)
    repo.save_message(ALICE, chat_id, "user", "mine")
    # WHEN Bob writes into it, or anyone writes into an unknown chat
    with pytest.raises(Forbidden):
        repo.save_message(BOB, chat_id, "user", "intruder")
    with pytest.raises(Forbidden):
        repo.save_message(ALICE, "00000000-0000-4000-8000-000000000000", "user", "nowhere")
    # THEN Alice's chat is unchanged
    page = repo.get_messages(ALICE, chat_id)
    assert [m.content for m in page.messages] == ["mine"]
    assert repo.list_chats(ALICE).conversations[0].last_message == "mine"


def test_get_messages_pages_newest_first_with_default_limit(repo: ChatRepository) -> None:
    # GIVEN 25 messages
    chat_id = repo.create_chat(ALICE)
    ids = _fill(repo, ALICE, chat_id, 25)
    # WHEN reading without a limit, then following the cursor
    first = repo.get_messages(ALICE, chat_id)
    second = repo.get_messages(ALICE, chat_id, first.next_cursor)
    # THEN pages hold 20 then 5, newest first, and together every message once
    assert [m.message_id for m in first.messages] == ids[::-1][:20]
    assert [m.message_id for m in second.messages] == ids[::-1][20:]
    assert first.next_cursor is not None and second.next_cursor is None
    assert second.messages[-1].content == "message 0" and second.messages[-1].role == "user"


def test_get_messages_limit_is_capped_at_50(repo: ChatRepository) -> None:
    # GIVEN 52 messages
    chat_id = repo.create_chat(ALICE)
    _fill(repo, ALICE, chat_id, 52)
    # WHEN asking for 100
    page = repo.get_messages(ALICE, chat_id, limit=100)
    # THEN at most 50 come back, with a cursor to the rest
    assert len(page.messages) == 50
    rest = repo.get_messages(ALICE, chat_id, page.next_cursor, limit=100)
    assert len(rest.messages) == 2 and rest.next_cursor is None


def test_get_messages_full_last_page_has_no_cursor(repo: ChatRepository) -> None:
    chat_id = repo.create_chat(ALICE)
    _fill(repo, ALICE, chat_id, 3)
    page = repo.get_messages(ALICE, chat_id, limit=3)
    assert len(page.messages) == 3 and page.next_cursor is None


def test_get_messages_of_unowned_or_unknown_chat_is_forbidden(repo: ChatRepository) -> None:
    chat_id = repo.create_chat(ALICE)
    _fill(repo, ALICE, chat_id, 2)
    with pytest.raises(Forbidden):
        repo.get_messages(BOB, chat_id)
    with pytest.raises(Forbidden):
        repo.get_messages(BOB, "00000000-0000-4000-8000-000000000000")


def test_get_messages_rejects_a_cursor_from_another_chat(repo: ChatRepository) -> None:
    # GIVEN two of Alice's chats and a cursor into the first
    first_chat, second_chat = repo.create_chat(ALICE), repo.create_chat(ALICE)
    _fill(repo, ALICE, first_chat, 3)
    _fill(repo, ALICE, second_chat, 3)
    cursor = repo.get_messages(ALICE, first_chat, limit=1).next_cursor
    assert cursor is not None
    # WHEN it is used on the second chat THEN it is a bad request
    with pytest.raises(BadRequest):
        repo.get_messages(ALICE, second_chat, cursor)


def test_list_chats_rejects_a_cursor_from_another_user(repo: ChatRepository) -> None:
    # GIVEN a cursor into Alice's chat list
    for _ in range(3):
        repo.create_chat(ALICE)
    repo.create_chat(BOB)
    cursor = repo.list_chats(ALICE, limit=1).next_cursor
    assert cursor is not None
    # WHEN Bob replays it THEN it is a bad request, never Alice's data
    with pytest.raises(BadRequest):
        repo.list_chats(BOB, cursor)


def test_cursors_are_bound_to_their_kind_of_listing(repo: ChatRepository) -> None:
    chat_id = repo.create_chat(ALICE)
    repo.create_chat(ALICE)
    _fill(repo, ALICE, chat_id, 3)
    messages_cursor = repo.get_messages(ALICE, chat_id, limit=1).next_cursor
    list_cursor = repo.list_chats(ALICE, limit=1).next_cursor
    assert messages_cursor and list_cursor
    with pytest.raises(BadRequest):
        repo.list_chats(ALICE, messages_cursor)
    with pytest.raises(BadRequest):
        repo.get_messages(ALICE, chat_id, list_cursor)


def test_tampered_or_forged_cursors_are_rejected(repo: ChatRepository) -> None:
    # GIVEN a valid cursor
    chat_id = repo.create_chat(ALICE)
    _fill(repo, ALICE, chat_id, 3)
    cursor = repo.get_messages(ALICE, chat_id, limit=1).next_cursor
    assert cursor is not None
    body, _, mac = cursor.partition(".")
    payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    payload["p"]["message_id"] = "7ZZZZZZZZZZZZZZZZZZZZZZZZZ"
    edited = base64.urlsafe_b64encode(json.dumps(payload).encode()).rstrip(b"=").decode()
    forged = encode_cursor("not-the-secret", ["messages", ALICE, chat_id], {"message_id": "7ZZZZZZZZZZZZ"})
    # WHEN the payload is edited, the signature forged, or the cursor is garbage THEN each is a 400
    for bad in (f"{edited}.{mac}", forged, "garbage", "", f"{body}.", "%%%.###"):
        with pytest.raises(BadRequest):
            repo.get_messages(ALICE, chat_id, bad or "x")


def test_title_is_the_first_user_message_cut_to_64_chars(repo: ChatRepository) -> None:
    # GIVEN a chat whose first question is long
    chat_id = repo.create_chat(ALICE)
    question = "Where did I leave my keys " + "x" * 100
    repo.save_message(ALICE, chat_id, "user", question)
    repo.save_message(ALICE, chat_id, "assistant", "On the hall table.")
    repo.save_message(ALICE, chat_id, "user", "And my wallet?")
    # THEN the title is its first 64 characters, and the preview is the latest message
    summary = repo.list_chats(ALICE).conversations[0]
    assert summary.title == question[:64] and len(summary.title) == 64
    assert summary.last_message == "And my wallet?"
    assert summary.id == chat_id and summary.updated_at.endswith("Z")


def test_list_chats_orders_by_newest_activity(repo: ChatRepository) -> None:
    # GIVEN three chats created in order, then activity in the oldest
    first, second, third = (repo.create_chat(ALICE) for _ in range(3))
    repo.save_message(ALICE, first, "user", "back to this one")
    # THEN the active one leads, the rest follow newest first
    assert [c.id for c in repo.list_chats(ALICE).conversations] == [first, third, second]


def test_list_chats_pages_with_default_and_capped_limits(repo: ChatRepository) -> None:
    # GIVEN 52 chats
    created = [repo.create_chat(ALICE) for _ in range(52)]
    # WHEN listing with the default limit, and with a limit above the maximum
    default = repo.list_chats(ALICE)
    capped = repo.list_chats(ALICE, limit=500)
    rest = repo.list_chats(ALICE, capped.next_cursor, limit=500)
    # THEN 20, then 50 and the remaining 2; no chat twice, newest first
    assert len(default.conversations) == 20 and default.next_cursor is not None
    assert len(capped.conversations) == 50 and len(rest.conversations) == 2 and rest.next_cursor is None
    assert [c.id for c in capped.conversations + rest.conversations] == created[::-1]


def test_list_chats_is_empty_for_a_new_user_and_never_shows_others(repo: ChatRepository) -> None:
    repo.create_chat(ALICE)
    assert repo.list_chats(BOB).conversations == [] and repo.list_chats(BOB).next_cursor is None
    bobs = repo.create_chat(BOB)
    assert [c.id for c in repo.list_chats(BOB).conversations] == [bobs]


def test_a_limit_below_one_is_a_bad_request(repo: ChatRepository) -> None:
    chat_id = repo.create_chat(ALICE)
    with pytest.raises(BadRequest):
        repo.list_chats(ALICE, limit=0)
    with pytest.raises(BadRequest):
        repo.get_messages(ALICE, chat_id, limit=0)
