"""`python -m discospace.sampler`: run the sampler until SIGTERM."""

from discospace.runtime import serve
from discospace.sampler.app import create_app


def main() -> None:
    serve(create_app, "sampler")


if __name__ == "__main__":
    main()
