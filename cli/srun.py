"""``srun``: not implemented yet (see cli/notyet.py)."""

from cli.notyet import refuse


def main() -> None:
    refuse("srun")


if __name__ == "__main__":
    main()
