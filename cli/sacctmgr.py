"""``sacctmgr``: not implemented yet (see cli/notyet.py)."""

from cli.notyet import refuse


def main() -> None:
    refuse("sacctmgr")


if __name__ == "__main__":
    main()
