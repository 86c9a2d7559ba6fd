"""Command-line helpers shared by the benchmark scripts."""


def choose(text, table, what, parser):
    """The names in a comma-separated `text` ("all": every key of `table`), in order; an
    unknown name is a usage error that points at --list."""
    names = list(table) if text == "all" else text.split(",")
    unknown = [name for name in names if name not in table]
    if unknown:
        parser.error(f"unknown {what} {', '.join(unknown)} (see --list)")
    return names
