/**
 * The WorldMM Live Memory client for phone apps.
 *
 * `schema.ts` is generated from the API's `openapi.json` (`make clients`; never edit it). This file adds only
 * what the document cannot say: the bearer token on every call, a retry after 429/503 that honours
 * `Retry-After`, the presigned upload form (its fields in order, then the file), iteration over cursor pages,
 * and the `GET /events` stream of the local gateway.
 */
import createClient, { type Client } from "openapi-fetch";

import type { components, paths } from "./schema.js";

export type { components, paths } from "./schema.js";
export type Schemas = components["schemas"];
export type AppEvent = Schemas["AppEvent"];
export type PresignedUpload = Schemas["PresignedUpload"];
export type ErrorBody = Schemas["ErrorBody"];

/** A token, or a function that returns the current one (a refreshed Cognito ID token, say). */
export type TokenSource = string | (() => string | Promise<string>);

export interface WorldmmOptions {
  /** The API's base URL: the HTTP API's invoke URL, or `worldmm serve`'s (http://127.0.0.1:8080). */
  baseUrl: string;
  token: TokenSource;
  /** Retries of a 429 or 503 answer (default 3). */
  retries?: number;
  /** A `Retry-After` longer than this is not waited for: the answer is returned (default 30 s). A daily
   * allowance's 429 says to come back tomorrow; that is for the app to show, not to sleep through. */
  maxRetryAfterS?: number;
  fetch?: typeof globalThis.fetch;
  /** How a retry waits (tests pass a fake clock). */
  sleep?: (ms: number) => Promise<void>;
}

/** A non-2xx answer: its status and the API's error body (`{"message": ..., "errors"?: [...]}`). */
export class WorldmmError extends Error {
  constructor(
    readonly status: number,
    readonly body: ErrorBody | undefined,
    readonly retryAfterS?: number,
  ) {
    super(`${status}: ${body?.message ?? "no error body"}`);
    this.name = "WorldmmError";
  }
}

const RETRIED = new Set([429, 503]);
const wait = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function bearer(token: TokenSource): Promise<string> {
  return typeof token === "function" ? await token() : token;
}

/** Seconds from a `Retry-After` header (seconds or an HTTP date); undefined when absent or unreadable. */
export function retryAfterSeconds(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null || value.trim() === "") return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

/** `fetch` that sends a 429/503 request again after its `Retry-After` (at most `retries` times). */
export function retryingFetch(options: WorldmmOptions): (input: Request) => Promise<Response> {
  const send = options.fetch ?? globalThis.fetch;
  const sleep = options.sleep ?? wait;
  const retries = options.retries ?? 3;
  const longest = options.maxRetryAfterS ?? 30;
  return async (input: Request) => {
    for (let attempt = 0; ; attempt++) {
      const response = await send(input.clone());
      if (!RETRIED.has(response.status) || attempt >= retries) return response;
      const after = retryAfterSeconds(response.headers.get("retry-after")) ?? 2 ** attempt;
      if (after > longest) return response;
      await response.body?.cancel();
      await sleep(after * 1000);
    }
  };
}

/** The typed API (`openapi-fetch` over `paths`), the bearer token added to each request, 429/503 retried. */
export function createApi(options: WorldmmOptions): Client<paths> {
  const api = createClient<paths>({ baseUrl: options.baseUrl, fetch: retryingFetch(options) });
  api.use({
    async onRequest({ request }) {
      request.headers.set("Authorization", `Bearer ${await bearer(options.token)}`);
      return request;
    },
  });
  return api;
}

/** The data of an answer, or a WorldmmError with its status, error body and `Retry-After`. */
export function ok<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.error !== undefined || result.data === undefined) {
    const retry = retryAfterSeconds(result.response.headers.get("retry-after"));
    throw new WorldmmError(result.response.status, result.error as ErrorBody | undefined, retry);
  }
  return result.data;
}

/**
 * Upload one object to a presigned URL the API gave (`CaptureFrames`, `CaptureAudio`): a multipart POST of
 * every form field, in the order given, then the object as `file` (S3 reads the fields before the file).
 * Resolves to the HTTP status (204 when stored); no token is sent (the signature is the authority).
 */
export async function uploadPresigned(
  upload: PresignedUpload,
  body: Blob | Uint8Array,
  options: { fetch?: typeof globalThis.fetch } = {},
): Promise<number> {
  const form = new FormData();
  for (const [name, value] of Object.entries(upload.fields ?? {})) form.append(name, value);
  const type = upload.fields?.["Content-Type"] ?? "application/octet-stream";
  form.append("file", body instanceof Blob ? body : new Blob([body as Uint8Array<ArrayBuffer>], { type }), "upload");
  const response = await (options.fetch ?? globalThis.fetch)(upload.url, { method: upload.method ?? "POST", body: form });
  await response.body?.cancel();
  return response.status;
}

/** Every item of a cursor-paged listing: `page(cursor)` fetches one page; `items` picks its entries. */
export async function* pages<P extends { next_cursor?: string | null }, T>(
  page: (cursor: string | undefined) => Promise<P>,
  items: (page: P) => T[],
): AsyncGenerator<T> {
  let cursor: string | undefined;
  do {
    const current = await page(cursor);
    yield* items(current);
    cursor = current.next_cursor ?? undefined;
  } while (cursor);
}

export interface EventStreamOptions {
  /** Start after this event id (`seq`); default: the caller's newest event (only what happens from now). */
  after?: string;
  /** Seconds each stream stays open before the client reconnects (0..5, default 5). */
  wait?: number;
  signal?: AbortSignal;
}

/**
 * The caller's app events from `GET /events` (the local gateway; on AWS they go to EventBridge), in order,
 * reconnecting with `Last-Event-ID` until `signal` aborts. A duplicate keeps its `eventId`.
 */
export async function* events(options: WorldmmOptions, stream: EventStreamOptions = {}): AsyncGenerator<AppEvent> {
  const send = options.fetch ?? globalThis.fetch;
  let last = stream.after;
  while (!stream.signal?.aborted) {
    const url = new URL("events", options.baseUrl.endsWith("/") ? options.baseUrl : `${options.baseUrl}/`);
    url.searchParams.set("wait", String(stream.wait ?? 5));
    const headers: Record<string, string> = { Authorization: `Bearer ${await bearer(options.token)}` };
    if (last !== undefined) headers["Last-Event-ID"] = last;
    let response: Response;
    try {
      response = await send(url, { headers, signal: stream.signal });
    } catch (error) {
      if (stream.signal?.aborted) return;
      throw error;
    }
    if (!response.ok || response.body === null) {
      const body = (await response.json().catch(() => undefined)) as ErrorBody | undefined;
      throw new WorldmmError(response.status, body);
    }
    try {
      for await (const message of serverSentEvents(response.body)) {
        if (message.id !== undefined) last = message.id;
        if (message.data !== undefined) yield JSON.parse(message.data) as AppEvent;
      }
    } catch (error) {
      if (stream.signal?.aborted) return;
      throw error;
    }
  }
}

interface SseMessage {
  id?: string;
  event?: string;
  data?: string;
}

/** The messages of a `text/event-stream` body (fields per the HTML living standard; comments skipped). */
async function* serverSentEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  const decoder = new TextDecoder();
  let buffer = "";
  let message: SseMessage = {};
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + (buffer.startsWith("\r\n", end) ? 2 : 1));
      if (line === "") {
        if (message.data !== undefined || message.id !== undefined) yield message;
        message = {};
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "data") message.data = message.data === undefined ? value : `${message.data}\n${value}`;
      else if (field === "id" || field === "event") message[field] = value;
    }
  }
}

/** The client an app holds: the typed API and the helpers, over one base URL and token source. */
export class Worldmm {
  readonly api: Client<paths>;

  constructor(readonly options: WorldmmOptions) {
    this.api = createApi(options);
  }

  upload(upload: PresignedUpload, body: Blob | Uint8Array): Promise<number> {
    return uploadPresigned(upload, body, { fetch: this.options.fetch });
  }

  events(stream: EventStreamOptions = {}): AsyncGenerator<AppEvent> {
    return events(this.options, stream);
  }

  /** Every chat of the caller, newest activity first, `limit` per page. */
  chats(limit?: number): AsyncGenerator<Schemas["ChatSummary"]> {
    return pages(
      async (cursor) => ok(await this.api.POST("/chats/list", { body: { cursor: cursor ?? null, limit: limit ?? null } })),
      (page) => page.conversations,
    );
  }

  /** Every message of a chat, newest first, `limit` per page. */
  messages(chatId: string, limit?: number): AsyncGenerator<Schemas["ChatMessage"]> {
    return pages(
      async (cursor) =>
        ok(await this.api.GET("/chats/messages", { params: { query: { chat_id: chatId, cursor, limit } } })),
      (page) => page.messages,
    );
  }

  /** Every memory of the caller overlapping [from, to), `limit` per page. */
  memories(query: { from?: string; to?: string; limit?: number } = {}): AsyncGenerator<Schemas["Memory"]> {
    return pages(
      async (cursor) => ok(await this.api.GET("/memories", { params: { query: { ...query, cursor } } })),
      (page) => page.memories,
    );
  }
}
