"""`python -m discospace.projector`: run the projector until SIGTERM."""

from discospace.projector.app import create_app
from discospace.runtime import serve


def main() -> None:
    serve(create_app, "projector")


if __name__ == "__main__":
    main()
