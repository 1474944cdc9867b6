"""`python -m discospace.actuator`: run the actuator until SIGTERM."""

from discospace.actuator.app import create_app
from discospace.runtime import serve


def main() -> None:
    serve(create_app, "actuator")


if __name__ == "__main__":
    main()
