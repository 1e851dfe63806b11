"""Built-in output formats, registered under `aicr.renderers` like anyone's."""
