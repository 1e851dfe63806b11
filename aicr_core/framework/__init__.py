"""The command-line framework: the app, commands, flags, output options, renderers' base, text layout."""
