"""The HTTP service (``covrag serve``): FastAPI app, limits, auth; needs ``covrag[serve]``."""

from covrag.server.config import ServerConfig

__all__ = ["ServerConfig", "create_app", "serve"]


def __getattr__(name: str) -> object:
    # FastAPI and uvicorn are an extra: import them only when the app is asked for.
    if name == "create_app":
        from covrag.server.app import create_app

        return create_app
    if name == "serve":
        from covrag.server.run import serve

        return serve
    raise AttributeError(name)
