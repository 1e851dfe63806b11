"""The built-in approval policy pack, one module per rule family.

Each policy is an ordinary `aicr.policies` entry point (setup.cfg), written
with nothing but what `aicr_core.plugin` offers any site author. Unlike a
third-party policy, each declares `INACTIVE_UNTIL_CONFIGURED`: it runs only
when the cluster's policy file lists it, with the settings its
`SETTINGS_MODEL` validates (the policy file's contract, written for
the cluster's administrators in docs/policies.md).
"""
