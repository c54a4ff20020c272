// The hand-written layer alone, against a fake fetch: 429/503 retried after Retry-After, a long Retry-After
// returned to the app, the upload form's field order, and the SSE parser's resume with Last-Event-ID.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Worldmm, events, ok, retryAfterSeconds, uploadPresigned, WorldmmError } from "../dist/index.js";

const json = (status, body, headers = {}) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });

test("a 429 and a 503 are sent again after their Retry-After, then the answer is returned", async () => {
  const answers = [
    json(429, { message: "slow down" }, { "retry-after": "2" }),
    json(503, { message: "memory unreachable" }, { "retry-after": "1" }),
    json(201, { sessionId: "01J", createdAt: "x", windowSeconds: 30, expectedFrames: 16 }),
  ];
  const slept = [];
  const seen = [];
  const app = new Worldmm({
    baseUrl: "http://api.test",
    token: () => "tok",
    fetch: async (request) => {
      seen.push(request.headers.get("authorization"));
      return answers.shift();
    },
    sleep: async (ms) => void slept.push(ms),
  });
  const started = ok(await app.api.POST("/sessions"));
  assert.equal(started.sessionId, "01J");
  assert.deepEqual(slept, [2000, 1000]);
  assert.deepEqual(seen, ["Bearer tok", "Bearer tok", "Bearer tok"]);
});

test("a daily allowance's long Retry-After is returned as a WorldmmError, not slept through", async () => {
  const app = new Worldmm({
    baseUrl: "http://api.test",
    token: "tok",
    fetch: async () => json(429, { message: "at most 2000 capture windows a day" }, { "retry-after": "40000" }),
    sleep: async () => assert.fail("slept"),
  });
  const result = await app.api.POST("/sessions");
  assert.throws(() => ok(result), (error) => error instanceof WorldmmError && error.status === 429 && error.retryAfterS === 40000);
  assert.equal(retryAfterSeconds("Wed, 21 Oct 2015 07:28:00 GMT", Date.parse("Wed, 21 Oct 2015 07:27:50 GMT")), 10);
});

test("the upload form sends its fields in the given order, then the file", async () => {
  let sent;
  const status = await uploadPresigned(
    { kind: "frame", key: "k", url: "http://bucket.test/", method: "POST", headers: {}, fields: { key: "k", "Content-Type": "image/jpeg", policy: "p", signature: "s" } },
    new Uint8Array([0xff, 0xd8]),
    { fetch: async (url, init) => ((sent = init.body), new Response(null, { status: 204 })) },
  );
  assert.equal(status, 204);
  assert.deepEqual([...sent.keys()], ["key", "Content-Type", "policy", "signature", "file"]);
});

test("the event stream reconnects with the last id and parses multi-line data", async () => {
  const requests = [];
  const streams = [
    "retry: 250\n\nid: 1\nevent: WindowProcessed\ndata: {\"type\":\"WindowProcessed\",\ndata: \"eventId\":\"a\"}\n\n: keepalive\n\n",
    "id: 2\r\nevent: SessionProcessed\r\ndata: {\"type\":\"SessionProcessed\",\"eventId\":\"b\"}\r\n\r\n",
  ];
  const got = [];
  const options = {
    baseUrl: "http://api.test",
    token: "tok",
    fetch: async (url, init) => {
      requests.push(init.headers["Last-Event-ID"]);
      return new Response(streams.shift() ?? "", { status: 200, headers: { "content-type": "text/event-stream" } });
    },
  };
  for await (const event of events(options, { after: "0" })) {
    got.push(event.eventId);
    if (got.length === 2) break;
  }
  assert.deepEqual(got, ["a", "b"]);
  assert.deepEqual(requests, ["0", "1"]);
});
