"""``sprio``: not implemented yet (see cli/notyet.py)."""

from cli.notyet import refuse


def main() -> None:
    refuse("sprio")


if __name__ == "__main__":
    main()
