"""toktier's stateful sessions behind our ``Session`` protocol (``verify.engines.sessions``).

``toktier.Tokenizer.session(session_id=, text=)`` is a context manager yielding a
session whose ``append(text)`` returns ``SessionUpdate(replace_from, replacement_ids,
all_ids)`` and ``append_patch(text)`` only the splice. We hold the context open for the
session's life and close it in ``close()``.

Options of the ``toktier:`` spec that matter here: ``store=DIR`` (toktier's persistent
session store, bound when the tokenizer loads) and ``patch=true`` (use ``append_patch``,
the splice-only call, instead of ``append``). ``state()`` is the session id and the
transcript so far: ``open_session(state)`` in a fresh process reopens it with
``text=`` as toktier documents for resuming a stored conversation.
"""

from __future__ import annotations

import json
from contextlib import ExitStack
from typing import Sequence

from verify.engines.base import as_token_array
from verify.engines.sessions import SessionUpdate
from verify.sample import Segment


class ToktierSession:
    def __init__(self, tokenizer, *, patch: bool, state: bytes | None = None):
        self.patch = patch
        session_id, text = None, ""
        if state is not None:
            saved = json.loads(state)
            session_id, text = saved["session_id"], saved["text"]
        self._stack = ExitStack()
        self._session = self._stack.enter_context(tokenizer.session(session_id=session_id, text=text))
        self._text = text
        self.appends = 0

    def append(self, segments: Sequence[Segment]) -> SessionUpdate:
        if any(s.allow_special for s in segments):
            raise ValueError("toktier sessions take plain text only (special_tokens=False)")
        text = "".join(s.text for s in segments)
        self.appends += 1
        self._text += text
        if self.patch:
            patch = self._session.append_patch(text)
            return SessionUpdate(int(patch.replace_from), as_token_array(list(patch.replacement_ids)),
                                 {"call": "append_patch"})
        update = self._session.append(text)
        return SessionUpdate(int(update.replace_from), as_token_array(list(update.replacement_ids)),
                             {"call": "append"})

    def state(self) -> bytes:
        return json.dumps({"session_id": self._session.session_id, "text": self._text}).encode()

    def close(self) -> None:
        self._stack.close()
