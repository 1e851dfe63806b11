"""The operator's domain: its API, the actions, rollout reads and the write, the policy engine."""
