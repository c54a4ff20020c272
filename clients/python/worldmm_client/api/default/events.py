from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    *,
    after: str | Unset = UNSET,
    wait: int | Unset = 5,
    last_event_id: str | Unset = UNSET,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(last_event_id, Unset):
        headers["Last-Event-ID"] = last_event_id



    

    params: dict[str, Any] = {}

    params["after"] = after

    params["wait"] = wait


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/events",
        "params": params,
    }


    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorBody | str | None:
    if response.status_code == 200:
        response_200 = response.text
        return response_200

    if response.status_code == 400:
        response_400 = ErrorBody.from_dict(response.json())



        return response_400

    if response.status_code == 401:
        response_401 = ErrorBody.from_dict(response.json())



        return response_401

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorBody | str]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    after: str | Unset = UNSET,
    wait: int | Unset = 5,
    last_event_id: str | Unset = UNSET,

) -> Response[ErrorBody | str]:
    """ The caller's app events as Server-Sent Events (local gateway; EventBridge on aws)

     Each message is `id: <seq>`, `event: <type>`, `data: <AppEvent JSON>`. The stream starts after
    `Last-Event-ID` (or `after`), else at the caller's newest event, and closes after `wait` seconds;
    reconnect with the last id to lose nothing. Only the caller's events; ids, indices and counts only.
    A duplicate (at least once) has the same `eventId`.

    Args:
        after (str | Unset):
        wait (int | Unset):  Default: 5.
        last_event_id (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | str]
     """


    kwargs = _get_kwargs(
        after=after,
wait=wait,
last_event_id=last_event_id,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    *,
    client: AuthenticatedClient,
    after: str | Unset = UNSET,
    wait: int | Unset = 5,
    last_event_id: str | Unset = UNSET,

) -> ErrorBody | str | None:
    """ The caller's app events as Server-Sent Events (local gateway; EventBridge on aws)

     Each message is `id: <seq>`, `event: <type>`, `data: <AppEvent JSON>`. The stream starts after
    `Last-Event-ID` (or `after`), else at the caller's newest event, and closes after `wait` seconds;
    reconnect with the last id to lose nothing. Only the caller's events; ids, indices and counts only.
    A duplicate (at least once) has the same `eventId`.

    Args:
        after (str | Unset):
        wait (int | Unset):  Default: 5.
        last_event_id (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | str
     """


    return sync_detailed(
        client=client,
after=after,
wait=wait,
last_event_id=last_event_id,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    after: str | Unset = UNSET,
    wait: int | Unset = 5,
    last_event_id: str | Unset = UNSET,

) -> Response[ErrorBody | str]:
    """ The caller's app events as Server-Sent Events (local gateway; EventBridge on aws)

     Each message is `id: <seq>`, `event: <type>`, `data: <AppEvent JSON>`. The stream starts after
    `Last-Event-ID` (or `after`), else at the caller's newest event, and closes after `wait` seconds;
    reconnect with the last id to lose nothing. Only the caller's events; ids, indices and counts only.
    A duplicate (at least once) has the same `eventId`.

    Args:
        after (str | Unset):
        wait (int | Unset):  Default: 5.
        last_event_id (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | str]
     """


    kwargs = _get_kwargs(
        after=after,
wait=wait,
last_event_id=last_event_id,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient,
    after: str | Unset = UNSET,
    wait: int | Unset = 5,
    last_event_id: str | Unset = UNSET,

) -> ErrorBody | str | None:
    """ The caller's app events as Server-Sent Events (local gateway; EventBridge on aws)

     Each message is `id: <seq>`, `event: <type>`, `data: <AppEvent JSON>`. The stream starts after
    `Last-Event-ID` (or `after`), else at the caller's newest event, and closes after `wait` seconds;
    reconnect with the last id to lose nothing. Only the caller's events; ids, indices and counts only.
    A duplicate (at least once) has the same `eventId`.

    Args:
        after (str | Unset):
        wait (int | Unset):  Default: 5.
        last_event_id (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | str
     """


    return (await asyncio_detailed(
        client=client,
after=after,
wait=wait,
last_event_id=last_event_id,

    )).parsed
