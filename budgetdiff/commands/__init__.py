"""One module per subcommand (compare, check, demo, whatif, rebudget, history, schema), each a
`run(options, edge) -> exit code` that builds what it needs and renders it; `output` is where a
Report goes (files, stdout, GitHub). `commands.parser` maps the command line onto them."""
