"""The completion helper's time budget: 2 s, or AICR_COMPLETION_SECONDS when it is a sane number."""
from __future__ import annotations

import pytest
from testfixtures import compare

from aicr_core.framework.completion import _budget


@pytest.mark.parametrize(("value", "expected"), [
    (None, 2.0), ("10", 10.0), ("0.5", 0.5), ("60", 60.0),
    ("0.1", 2.0), ("61", 2.0), ("-3", 2.0), ("nan", 2.0), ("inf", 2.0), ("ten", 2.0), ("", 2.0),
])
def test_the_budget_is_two_seconds_unless_a_sane_figure_is_given(monkeypatch: pytest.MonkeyPatch, value: str | None,
                                                                   expected: float) -> None:
    if value is None:
        monkeypatch.delenv("AICR_COMPLETION_SECONDS", raising=False)
    else:
        monkeypatch.setenv("AICR_COMPLETION_SECONDS", value)
    compare(_budget(), expected=expected)
