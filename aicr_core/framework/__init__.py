"""The command-line framework: the app, commands, flags, results, output options, renderers' base, text layout,
jsonpath, completion, and the executable's start and end."""
