"""The operator's domain: its API, the actions, rollout reads, the read model, the decision and the write, the policy
engine and the policy file."""
