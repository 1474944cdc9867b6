"""`python -m discospace.registry`: run the registry until SIGTERM."""

from discospace.registry.app import create_app
from discospace.runtime import serve


def main() -> None:
    serve(create_app, "registry")


if __name__ == "__main__":
    main()
