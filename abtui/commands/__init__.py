"""One module per `abtui` subcommand: add_arguments(parser) and run(args) -> exit code."""
