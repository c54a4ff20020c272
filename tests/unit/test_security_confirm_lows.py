"""Issue 64, Lows: what an MCP client sends cannot spoof the operator's console, nor grow the pending codes."""

from __future__ import annotations

import pytest

from worldmm.gateway.confirm import MAX_PENDING_PER_USER, ConfirmationCodes, ConsoleChannel, printable

pytestmark = pytest.mark.unit


class Screen:
    def __init__(self) -> None:
        self.shown: list[tuple[str, str, str]] = []

    def show(self, user_id: str, action: str, code: str, ttl_s: int) -> None:
        self.shown.append((user_id, action, code))


def test_security_console_shows_a_spoofing_session_id_escaped_fails_on_todays_code(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a forget_span request whose session id carries ANSI escapes and a fake second line
    action = "forget_span of session x\x1b[2K\r*** forget_span of session holiday requested\n\u202e"
    # WHEN the console shows its code
    ConsoleChannel().show("alice", action, "ABCD2345", 300)
    shown = capsys.readouterr().err
    # THEN it is one line, with every control character as an escape
    assert shown.strip("\n").count("\n") == 0
    assert "\x1b" not in shown and "\r" not in shown and "\u202e" not in shown
    assert "\\x1b[2K" in shown


def test_security_printable_caps_what_it_shows() -> None:
    assert len(printable("a" * 10_000)) <= 200


def test_security_pending_codes_stay_bounded_per_user_fails_on_todays_code() -> None:
    # GIVEN a client asking for a code for span after span
    clock = [0.0]
    codes = ConfirmationCodes(Screen(), clock=lambda: clock[0])
    for n in range(500):
        codes.issue("alice", f"forget_span of session s{n}")
    # THEN only the newest few stay pending; another user's code is untouched
    codes.issue("bob", "forget_me")
    assert codes.pending == MAX_PENDING_PER_USER + 1
    # AND expired codes go when the next is issued
    clock[0] += 301
    codes.issue("carol", "forget_me")
    assert codes.pending == 1


def test_the_newest_code_still_redeems_after_older_ones_were_dropped() -> None:
    screen = Screen()
    codes = ConfirmationCodes(screen)
    for n in range(MAX_PENDING_PER_USER + 3):
        codes.issue("alice", f"forget_span of session s{n}")
    user, action, code = screen.shown[-1]
    assert codes.redeem(user, action, code)
    _, first_action, first_code = screen.shown[0]
    assert not codes.redeem("alice", first_action, first_code)
