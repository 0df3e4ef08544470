from flows.cli import entry

entry()
