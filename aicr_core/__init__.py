"""The kubectl-aicr core: application, plugin discovery, policies, Kubernetes session, operator API.

It knows no particular command: commands, renderers and policies are plugins
(see setup.cfg), ours included.
"""
