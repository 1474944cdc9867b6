"""`python -m discospace.explorer`: run the explorer until SIGTERM."""

from discospace.explorer.app import create_app
from discospace.runtime import serve


def main() -> None:
    serve(create_app, "explorer")


if __name__ == "__main__":
    main()
