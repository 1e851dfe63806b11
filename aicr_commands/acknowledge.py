"""`kubectl aicr acknowledge ROLLOUT`."""
from __future__ import annotations

from aicr_commands._action_command import ActionCommand
from aicr_core.domain.actions import ACKNOWLEDGE


class Acknowledge(ActionCommand):
    """Record, as yourself, that the post-apply steps of the release a rollout waits on are done.

    Only for a rollout in AwaitingAcknowledgement; approvers only (the API
    server checks). The rollout then continues.

    Examples:
      # After doing the release's after-apply steps
      kubectl aicr acknowledge rollout-3f9a1c0d2b7e4a51-1

      # Which steps are those? describe lists them under "Recorded steps"
      kubectl aicr describe rollout-3f9a1c0d2b7e4a51-1

    Codes:
      NOT_AWAITING_ACKNOWLEDGEMENT
      POLICY_DENIED
      POLICY_ERROR
      ADMISSION_DENIED
      CONFLICT
      NOT_FOUND
      API
    """

    action = ACKNOWLEDGE
