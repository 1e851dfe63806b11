"""The built-in commands, registered under `aicr.commands` exactly as a site package registers its own."""
