// The phone's whole flow through the TypeScript client against `worldmm serve` (issue 65).
//
// Run by tests/integration/test_typescript_client.py, which starts the gateway and sets:
// WORLDMM_URL, WORLDMM_TOKEN (the wearer), WORLDMM_OTHER_TOKEN (another user), WORLDMM_SESSION_DIR (the
// frames of examples/short-session and each window's audio as WAV), WORLDMM_QUESTION and WORLDMM_EXPECT.
import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";

import { Worldmm, WorldmmError, ok } from "../dist/index.js";

const env = (name) => {
  const value = process.env[name];
  assert.ok(value, `${name} is not set (tests/integration/test_typescript_client.py sets it)`);
  return value;
};

async function collect(generator, count = Infinity) {
  const items = [];
  for await (const item of generator) {
    items.push(item);
    if (items.length >= count) break;
  }
  return items;
}

test("the phone captures a session, learns it is remembered, asks, pages and forgets", async () => {
  const baseUrl = env("WORLDMM_URL");
  const app = new Worldmm({ baseUrl, token: env("WORLDMM_TOKEN") });
  const other = new Worldmm({ baseUrl, token: async () => env("WORLDMM_OTHER_TOKEN") });
  const dir = env("WORLDMM_SESSION_DIR");

  // Listen first: every event of this user (a fresh one), until its session is processed.
  const listening = new AbortController();
  const received = [];
  let sessionId;
  const processed = (async () => {
    for await (const event of app.events({ after: "0", signal: listening.signal })) {
      received.push(event);
      if (event.type === "SessionProcessed" && event.sessionId === sessionId) return event;
    }
  })();

  // Start a session, upload each window's frames and audio to the presigned URLs, end it.
  const started = ok(await app.api.POST("/sessions"));
  sessionId = started.sessionId;
  const windows = (await readdir(dir)).filter((name) => name.startsWith("window_")).sort();
  assert.equal(windows.length, 4);
  for (const window of windows) {
    const windowIndex = Number(window.split("_")[1]);
    const frames = (await readdir(join(dir, window))).filter((name) => name.endsWith(".jpg")).sort();
    const presigned = ok(
      await app.api.POST("/sessions/{id}/frames", {
        params: { path: { id: sessionId } },
        body: { windowIndex, count: frames.length },
      }),
    );
    assert.equal(presigned.uploads.length, frames.length);
    for (const [i, upload] of presigned.uploads.entries()) {
      assert.equal(await app.upload(upload, await readFile(join(dir, window, frames[i]))), 204);
    }
    const audio = ok(
      await app.api.POST("/sessions/{id}/audio", {
        params: { path: { id: sessionId } },
        body: { windowIndex, contentType: "audio/wav" },
      }),
    );
    assert.equal(await app.upload(audio.uploads[0], await readFile(join(dir, window, "audio.wav"))), 204);
  }
  const ended = ok(await app.api.POST("/sessions/{id}/end", { params: { path: { id: sessionId } } }));
  assert.equal(ended.sessionId, sessionId);

  // Wait for its memories: the push the app would show ("your morning is remembered").
  const timeout = setTimeout(() => listening.abort(), 90_000);
  const done = await processed;
  clearTimeout(timeout);
  listening.abort();
  assert.ok(done, `no SessionProcessed; received ${JSON.stringify(received)}`);
  assert.deepEqual([done.windows, done.complete, done.failed], [4, 4, 0]);
  const windowEvents = received.filter((e) => e.sessionId === sessionId && e.type === "WindowProcessed");
  assert.deepEqual(windowEvents.map((e) => e.windowIndex).sort(), [0, 1, 2, 3]);
  assert.equal(new Set(received.map((e) => e.eventId)).size, received.length);
  const status = ok(await app.api.GET("/sessions/{id}", { params: { path: { id: sessionId } } }));
  assert.equal(status.ended, true);
  assert.equal(status.counts.complete, 4);

  // Ask about it, follow up in the same chat, and start a second chat.
  const question = env("WORLDMM_QUESTION");
  const first = ok(await app.api.POST("/memories/chat", { body: { question } }));
  assert.match(first.answer.toLowerCase(), new RegExp(env("WORLDMM_EXPECT")));
  ok(await app.api.POST("/memories/chat", { body: { question: "And who was there?", chat_id: first.chat_id } }));
  const second = ok(await app.api.POST("/memories/chat", { body: { question: "Where was I?" } }));

  // Page through the chats one at a time, and through the first chat's messages.
  const chats = await collect(app.chats(1));
  assert.deepEqual(chats.map((c) => c.id).sort(), [first.chat_id, second.chat_id].sort());
  const messages = await collect(app.messages(first.chat_id, 1));
  assert.deepEqual(messages.map((m) => m.role), ["assistant", "user", "assistant", "user"]);

  // The session's memories, paged two at a time; one of them in detail.
  const memories = await collect(app.memories({ limit: 2 }));
  const windowMemories = memories.filter((m) => m.session_id === sessionId && m.duration_seconds === 30);
  assert.equal(windowMemories.length, 4);
  const detail = ok(await app.api.GET("/memories/{id}", { params: { path: { id: windowMemories[1].id } } }));
  assert.ok(detail.entities.length > 0);

  // Another user's token: 403 on every one of the wearer's ids, and no events of theirs.
  const refused = [
    await other.api.POST("/sessions/{id}/frames", { params: { path: { id: sessionId } }, body: { windowIndex: 0, count: 1 } }),
    await other.api.POST("/sessions/{id}/audio", { params: { path: { id: sessionId } }, body: { windowIndex: 0 } }),
    await other.api.POST("/sessions/{id}/end", { params: { path: { id: sessionId } } }),
    await other.api.GET("/sessions/{id}", { params: { path: { id: sessionId } } }),
    await other.api.DELETE("/sessions/{id}", { params: { path: { id: sessionId } } }),
    await other.api.GET("/chats/messages", { params: { query: { chat_id: first.chat_id } } }),
    await other.api.POST("/memories/chat", { body: { question: "Hello?", chat_id: first.chat_id } }),
    await other.api.GET("/memories/{id}", { params: { path: { id: detail.id } } }),
    await other.api.PATCH("/entities/{id}", { params: { path: { id: detail.entities[0].id } }, body: { name: "Mallory" } }),
  ];
  assert.deepEqual(refused.map((r) => r.response.status), Array(refused.length).fill(403));
  for (const r of refused) assert.equal(r.error.message, "Forbidden");
  const quiet = new AbortController();
  setTimeout(() => quiet.abort(), 1500);
  assert.deepEqual(await collect(other.events({ after: "0", wait: 1, signal: quiet.signal })), []);

  // Forget the span of window 1: its memory is gone, the others stay.
  const span = windowMemories[1];
  const forgotten = ok(await app.api.DELETE("/memories", { params: { query: { from: span.start_time, to: span.end_time } } }));
  assert.ok(forgotten.deleted["postgres.windows"] >= 1, JSON.stringify(forgotten));
  const after = (await collect(app.memories())).filter((m) => m.session_id === sessionId && m.duration_seconds === 30);
  assert.deepEqual(after.map((m) => m.window_index).sort(), [0, 2, 3]);
  const gone = await app.api.GET("/memories/{id}", { params: { path: { id: span.id } } });
  assert.equal(gone.response.status, 403);
  assert.throws(() => ok(gone), WorldmmError);
});
