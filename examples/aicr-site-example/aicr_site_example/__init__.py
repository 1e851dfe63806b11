"""An organisation's own additions to kubectl aicr, installed with pip."""
