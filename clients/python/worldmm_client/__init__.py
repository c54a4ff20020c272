
""" A client library for accessing WorldMM Live Memory """
from .client import AuthenticatedClient, Client

__all__ = (
    "AuthenticatedClient",
    "Client",
)
