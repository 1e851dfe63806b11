"""`kubectl aicr revoke ROLLOUT --reason TEXT`."""
from __future__ import annotations

from aicr_commands._action_command import ActionCommand
from aicr_core.domain.actions import REVOKE


class Revoke(ActionCommand):
    """Revoke a rollout's approval: the step in flight finishes, no further step starts.

    Refuses a rollout that is not approved, already revoked or has ended; the
    API server also refuses one in Validating.

    Examples:
      # Stop a rollout before its next step
      kubectl aicr revoke rollout-3f9a1c0d2b7e4a51-1 --reason "Training job not checkpointed"

      # See what would be written, and whether you may, without writing
      kubectl aicr revoke rollout-3f9a1c0d2b7e4a51-1 --reason "Not yet" --dry-run=client

    Codes:
      NOT_APPROVED
      ALREADY_REVOKED
      ENDED
      POLICY_DENIED
      POLICY_ERROR
      ADMISSION_DENIED  e.g. the rollout is in Validating
      CONFLICT
      NOT_FOUND
      API
    """

    action = REVOKE
