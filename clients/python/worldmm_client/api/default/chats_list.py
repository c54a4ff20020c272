from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.chats_page import ChatsPage
from ...models.error_body import ErrorBody
from ...models.list_chats_request import ListChatsRequest
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    *,
    body: ListChatsRequest | Unset = UNSET,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/chats/list",
    }

    
    if not isinstance(body, Unset):
        _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ChatsPage | ErrorBody | None:
    if response.status_code == 200:
        response_200 = ChatsPage.from_dict(response.json())



        return response_200

    if response.status_code == 400:
        response_400 = ErrorBody.from_dict(response.json())



        return response_400

    if response.status_code == 401:
        response_401 = ErrorBody.from_dict(response.json())



        return response_401

    if response.status_code == 500:
        response_500 = ErrorBody.from_dict(response.json())



        return response_500

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ChatsPage | ErrorBody]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: ListChatsRequest | Unset = UNSET,

) -> Response[ChatsPage | ErrorBody]:
    """ The caller's chats, newest activity first

    Args:
        body (ListChatsRequest | Unset): Body of POST /chats/list; a limit above the maximum is
            clamped by the repository.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ChatsPage | ErrorBody]
     """


    kwargs = _get_kwargs(
        body=body,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    *,
    client: AuthenticatedClient,
    body: ListChatsRequest | Unset = UNSET,

) -> ChatsPage | ErrorBody | None:
    """ The caller's chats, newest activity first

    Args:
        body (ListChatsRequest | Unset): Body of POST /chats/list; a limit above the maximum is
            clamped by the repository.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ChatsPage | ErrorBody
     """


    return sync_detailed(
        client=client,
body=body,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: ListChatsRequest | Unset = UNSET,

) -> Response[ChatsPage | ErrorBody]:
    """ The caller's chats, newest activity first

    Args:
        body (ListChatsRequest | Unset): Body of POST /chats/list; a limit above the maximum is
            clamped by the repository.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ChatsPage | ErrorBody]
     """


    kwargs = _get_kwargs(
        body=body,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient,
    body: ListChatsRequest | Unset = UNSET,

) -> ChatsPage | ErrorBody | None:
    """ The caller's chats, newest activity first

    Args:
        body (ListChatsRequest | Unset): Body of POST /chats/list; a limit above the maximum is
            clamped by the repository.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ChatsPage | ErrorBody
     """


    return (await asyncio_detailed(
        client=client,
body=body,

    )).parsed
