"""Input over a synchronous ``tools/call`` (multi round-trip requests): the tool's earlier answers
travel to the client and back in a ``requestState`` the server signs, so the server keeps nothing
between rounds; the client's ``inputResponses`` are checked, and no input request goes to a client
that did not declare the capability it needs.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from typing import Any

from mcp_tasks._errors import INVALID_PARAMS, MISSING_REQUIRED_CAPABILITY, McpError
from mcp_tasks._input_kinds import kind_of
from mcp_tasks._wire import META_CLIENT_CAPABILITIES

__all__ = ["InputRounds", "check_input_capabilities", "check_responses"]

_CAPABILITY_OF_KIND = {
    "form": ("elicitation", "form"),
    "url": ("elicitation", "url"),
    "sampling": ("sampling", None),
    "roots": ("roots", None),
}


class InputRounds:
    """Seals a call's answers into its ``requestState`` and reads them back, with a secret of its
    own: a state from elsewhere, or altered, is refused.
    """

    def __init__(self) -> None:
        self._secret = secrets.token_bytes(32)

    def answers(self, params: dict[str, Any]) -> dict[str, Any]:
        """The answers a ``tools/call`` brings: those sealed in its state, then its inputResponses."""
        answers = self.unseal(params.get("requestState"))
        responses = params.get("inputResponses")
        if responses is not None:
            answers.update(check_responses(responses))
        return answers

    def seal(self, answers: dict[str, Any]) -> str:
        """The ``requestState`` that carries `answers` to the next round."""
        payload = json.dumps(answers, separators=(",", ":"), sort_keys=True).encode()
        mac = hmac.new(self._secret, payload, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(payload).decode() + "." + base64.urlsafe_b64encode(mac).decode()

    def unseal(self, state: object) -> dict[str, Any]:
        """The answers in a ``requestState`` this server sealed (none for no state)."""
        if state is None:
            return {}
        try:
            if not isinstance(state, str):
                raise ValueError("not a string")
            body, _, signature = state.partition(".")
            payload = base64.urlsafe_b64decode(body.encode())
            expected = hmac.new(self._secret, payload, hashlib.sha256).digest()
            if not hmac.compare_digest(expected, base64.urlsafe_b64decode(signature.encode())):
                raise ValueError("bad signature")
            answers = json.loads(payload)
            if not isinstance(answers, dict):
                raise ValueError("not an object")
        except (ValueError, binascii.Error):
            raise McpError(INVALID_PARAMS, "Invalid requestState") from None
        return answers


def check_responses(responses: object) -> dict[str, Any]:
    """The ``inputResponses`` of a request: an object of objects under non-empty keys."""
    if not isinstance(responses, dict):
        raise McpError(INVALID_PARAMS, "inputResponses must be an object")
    for key, value in responses.items():
        if not key:
            raise McpError(INVALID_PARAMS, "inputResponses keys must be non-empty")
        if not isinstance(value, dict):
            raise McpError(INVALID_PARAMS, f"inputResponses[{key!r}] must be an object")
    return responses


def check_input_capabilities(requests: dict[str, Any], meta: dict[str, Any]) -> None:
    """A server must not send input requests of a kind the client did not declare."""
    caps = meta.get(META_CLIENT_CAPABILITIES) or {}
    missing: dict[str, Any] = {}
    for request in requests.values():
        kind = kind_of(request)
        if kind is None:
            continue
        top, mode = _CAPABILITY_OF_KIND[kind]
        declared = caps.get(top)
        if not isinstance(declared, dict):
            missing.setdefault(top, {} if mode is None else {mode: {}})
        elif mode == "url" and "url" not in declared:
            missing.setdefault(top, {})["url"] = {}
        elif mode == "form" and declared and "form" not in declared:
            missing.setdefault(top, {})["form"] = {}
    if missing:
        raise McpError(
            MISSING_REQUIRED_CAPABILITY,
            "Missing required client capability",
            {"requiredCapabilities": missing},
        )
