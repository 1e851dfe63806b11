"""The kubectl-aicr core, in rooms (the framework, the session, the domain, the fleet) and leaves: docs/architecture.md.

It imports no command: commands, renderers and policies are plugins (see
setup.cfg), ours included; what it knows of the built-in ones is words (their
usage lines, the help of the flags they share, the three actions).
"""
