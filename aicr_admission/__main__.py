"""`python -m aicr_admission`: the same as the `aicr-admission` console script."""
from aicr_admission.main import console_script

console_script()
