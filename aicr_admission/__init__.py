"""`aicr-admission`: a validating admission webhook that runs the approval policies `kubectl aicr` runs.

A policy checked only in the plugin binds only those who use the plugin: a
raw `kubectl patch` of `spec.approval` skips it. This program closes that gap
for every write that adds an approval, a revocation or an acknowledgement:

- `review`: one AdmissionReview request in, one verdict out, through the very
  hook calls the CLI makes (`aicr_core.domain.policy_engine`), plus the checks of time that
  CEL cannot make;
- `policy_source`: the cluster's policy file, re-read in the background so a
  change takes effect within seconds, without a restart;
- `server`: the HTTPS server (an asyncio event loop and h11, with the time and
  size limits neither has; docs/webhook.md, "Choosing the server", says why);
- `metrics`, `audit`: its Prometheus metrics, and the auditAnnotations and
  Events it records of each decision (docs/webhook.md);
- `main`: the command line (flags named as Kubernetes components name them),
  structured logs, signals.
"""
