// The local page of `worldmm serve`: a day's timeline at four scales, search, chat with citations, span forget.
// Memory text is what a camera saw and heard (anyone can put words in front of it): it is only ever set as
// text (textContent), never parsed as HTML. The token stays in this tab's sessionStorage.
"use strict";

const TOKEN_KEY = "worldmm.token";
const SCALES = [3600, 600, 180, 30];
const SCALE_NAMES = { 30: "30 s", 180: "3 min", 600: "10 min", 3600: "1 h" };
const PAGE_LIMIT = 500; // MEMORY_PAGE_MAX
const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;

const $ = (id) => document.getElementById(id);
let generation = 0; // a newer day's load makes an older one stop rendering
let chatId = null;

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

async function api(method, path, body) {
  const headers = { Authorization: "Bearer " + token() };
  const init = { method, headers };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  let data = null;
  try {
    data = await response.json();
  } catch (_) {
    data = null;
  }
  if (response.status === 401) {
    signOut("The server refused this token (expired, or made for another install).");
  }
  if (!response.ok) {
    throw new ApiError(response.status, (data && data.message) || response.statusText || "request failed");
  }
  return data;
}

// ---- time ----------------------------------------------------------------------------------------------------

function pad(n) {
  return String(n).padStart(2, "0");
}

function clock(iso) {
  const t = new Date(iso);
  return `${pad(t.getHours())}:${pad(t.getMinutes())}:${pad(t.getSeconds())}`;
}

function localDay(date) {
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
}

function localInput(date) {
  return `${localDay(date)}T${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

function dayBounds(value) {
  const [y, m, d] = value.split("-").map(Number);
  return [new Date(y, m - 1, d), new Date(y, m - 1, d + 1)]; // local midnights (a DST day is 23 or 25 h)
}

// ---- sign in -------------------------------------------------------------------------------------------------

function showSignedIn(signedIn) {
  $("sign-in").hidden = signedIn;
  $("app").hidden = !signedIn;
  $("sign-out").hidden = !signedIn;
}

function signOut(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  generation += 1;
  showSignedIn(false);
  $("sign-in-error").textContent = message || "";
}

function signIn(event) {
  event.preventDefault();
  const value = $("token").value.trim().replace(/^Bearer\s+/i, "");
  if (!/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(value)) {
    $("sign-in-error").textContent = "That is not a token: paste the whole line `worldmm token` printed.";
    return;
  }
  sessionStorage.setItem(TOKEN_KEY, value);
  $("token").value = "";
  $("sign-in-error").textContent = "";
  showSignedIn(true);
  loadDay();
  watchEvents();
  route(); // a memory link opened before signing in
}

// ---- events (GET /events: the caller's app events as Server-Sent Events) ----------------------------------------

let eventsRunning = false;
let lastEventId = null;

function describeEvent(event) {
  const session = event.sessionId.slice(-6);
  if (event.type === "SessionProcessed") {
    return `Session …${session} remembered: ${event.complete} of ${event.windows} windows` +
      (event.failed ? `, ${event.failed} failed` : "");
  }
  if (event.type === "WindowFailed") return `Window ${event.windowIndex} of …${session} failed (attempt ${event.attempt})`;
  return `Window ${event.windowIndex} of …${session} remembered`;
}

function showEvent(event) {
  const item = el("li", event.type, describeEvent(event));
  item.dataset.eventId = event.eventId;
  $("event-log").prepend(item);
  if (event.type === "SessionProcessed") loadDay();
}

// EventSource cannot send a bearer token: the stream is read with fetch, reconnecting with Last-Event-ID.
async function watchEvents() {
  if (eventsRunning) return;
  eventsRunning = true;
  const decoder = new TextDecoder();
  while (token()) {
    try {
      const headers = { Authorization: "Bearer " + token() };
      if (lastEventId !== null) headers["Last-Event-ID"] = lastEventId;
      const response = await fetch("/events?wait=5", { headers });
      if (!response.ok || !response.body) {
        if (response.status === 401) signOut("The server refused this token (expired, or made for another install).");
        break;
      }
      const reader = response.body.getReader();
      let buffer = "";
      let message = {};
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let end;
        while ((end = buffer.indexOf("\n")) >= 0) {
          const line = buffer.slice(0, end).replace(/\r$/, "");
          buffer = buffer.slice(end + 1);
          if (line === "") {
            if (message.id !== undefined) lastEventId = message.id;
            if (message.data !== undefined) showEvent(JSON.parse(message.data));
            message = {};
          } else if (!line.startsWith(":")) {
            const colon = line.indexOf(":");
            const field = colon < 0 ? line : line.slice(0, colon);
            const text = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
            if (field === "data" || field === "id") message[field] = text;
          }
        }
      }
    } catch (_) {
      await new Promise((resolve) => setTimeout(resolve, 1000)); // the server restarted: try again shortly
    }
  }
  eventsRunning = false;
}

// ---- timeline ------------------------------------------------------------------------------------------------

function lane(scale) {
  return document.querySelector(`.lane[data-scale="${scale}"] ol`);
}

function memoryItem(memory) {
  const item = el("li", `memory ${memory.status}`);
  item.dataset.id = memory.id;
  item.dataset.text = (memory.caption || "").toLowerCase();
  const link = el("a");
  link.href = "#memory/" + encodeURIComponent(memory.id);
  link.append(el("time", "when", clock(memory.start_time)));
  link.append(el("span", "caption", memory.caption || (memory.status === "complete" ? "(no caption)" : memory.status)));
  if (memory.caption_source) link.append(el("span", "source", memory.caption_source));
  item.append(link);
  return item;
}

// Marks for bench/bench_page.py: the first memory in the DOM, and the frame after it (it has been painted).
function firstContent() {
  if (window.__worldmmFirstContent === undefined) {
    window.__worldmmFirstContent = performance.now();
    requestAnimationFrame(() => requestAnimationFrame(() => {
      window.__worldmmFirstPaint = performance.now();
    }));
  }
}

async function loadLane(run, scale, from, to) {
  const list = lane(scale);
  let cursor = null;
  let count = 0;
  do {
    const query = cursor
      ? { cursor, limit: PAGE_LIMIT }
      : { from: from.toISOString(), to: to.toISOString(), scale, limit: PAGE_LIMIT };
    const page = await api("GET", "/memories?" + new URLSearchParams(query));
    if (run !== generation) return 0;
    const items = document.createDocumentFragment();
    for (const memory of page.memories) items.append(memoryItem(memory));
    list.append(items);
    count += page.memories.length;
    if (page.memories.length) firstContent();
    applySearch();
    cursor = page.next_cursor;
  } while (cursor);
  return count;
}

async function loadDay() {
  const run = ++generation;
  const day = $("day").value;
  if (!day) return;
  const [from, to] = dayBounds(day);
  for (const scale of SCALES) lane(scale).replaceChildren();
  $("timeline-status").textContent = "Loading…";
  window.__worldmmFirstContent = undefined;
  window.__worldmmFirstPaint = undefined;
  window.__worldmmTimelineDone = undefined;
  document.body.dataset.timeline = "loading";
  try {
    const counts = await Promise.all(SCALES.map((scale) => loadLane(run, scale, from, to)));
    if (run !== generation) return;
    const total = counts.reduce((a, b) => a + b, 0);
    $("timeline-status").textContent = total ? `${counts[3]} windows, ${total - counts[3]} summaries` : "Nothing remembered on this day.";
    window.__worldmmTimelineDone = performance.now();
    document.body.dataset.timeline = "done";
  } catch (error) {
    if (run === generation) $("timeline-status").textContent = `Could not load the day: ${error.message}`;
  }
}

function stepDay(days) {
  const [start] = dayBounds($("day").value || localDay(new Date()));
  $("day").value = localDay(new Date(start.getFullYear(), start.getMonth(), start.getDate() + days));
  loadDay();
}

// ---- search --------------------------------------------------------------------------------------------------

function applySearch() {
  const words = $("search").value.toLowerCase().split(/\s+/).filter(Boolean);
  let shown = 0;
  let total = 0;
  for (const item of document.querySelectorAll("#timeline li.memory")) {
    total += 1;
    const hit = words.every((word) => item.dataset.text.includes(word));
    item.hidden = !hit;
    if (hit) shown += 1;
  }
  $("search-count").textContent = words.length ? `${shown} of ${total} match` : "";
}

// ---- one memory ----------------------------------------------------------------------------------------------

function field(list, name, value) {
  list.append(el("dt", null, name));
  list.append(el("dd", null, value));
}

async function showMemory(id) {
  const panel = $("memory");
  const body = $("memory-body");
  panel.hidden = false;
  body.replaceChildren(el("p", null, "Loading…"));
  let memory;
  try {
    memory = await api("GET", "/memories/" + encodeURIComponent(id));
  } catch (error) {
    body.replaceChildren(el("p", "error", error.status === 403 ? "No such memory." : error.message));
    return;
  }
  const facts = el("dl");
  field(facts, "When", `${new Date(memory.start_time).toLocaleString()} – ${clock(memory.end_time)}`);
  field(facts, "Scale", SCALE_NAMES[memory.duration_seconds] || `${memory.duration_seconds} s`);
  field(facts, "Caption from", memory.caption_source || "—");
  field(facts, "Status", memory.status);
  field(facts, "Session", `${memory.session_id} #${memory.window_index}`);
  const parts = [facts, el("p", "caption", memory.caption || "(no caption)")];
  if (memory.transcript) {
    parts.push(el("h3", null, "Heard"), el("blockquote", "transcript", memory.transcript));
  }
  if (memory.entities.length) {
    const names = el("ul", "entities");
    for (const entity of memory.entities) names.append(entityItem(entity, memory.id));
    parts.push(el("h3", null, "Who and what"), names);
  }
  if (memory.triples.length) {
    const triples = el("ul", "triples");
    for (const t of memory.triples) {
      const item = el("li", t.valid ? null : "invalid", `${t.subject} — ${t.predicate} — ${t.object}`);
      if (!t.valid) item.title = "No longer valid";
      triples.append(item);
    }
    parts.push(el("h3", null, "Facts"), triples);
  }
  const media = memory.media.filter((m) => /^https?:\/\//i.test(m.url));
  if (media.length) {
    const links = el("ul", "media");
    for (const m of media) {
      const link = el("a", null, m.name);
      link.href = m.url;
      link.target = "_blank";
      link.rel = "noopener noreferrer";
      const item = el("li");
      item.append(link);
      links.append(item);
    }
    parts.push(el("h3", null, `Media (links expire in ${media[0].expires_in_s} s)`), links);
  }
  body.replaceChildren(...parts);
  $("forget-from").value = localInput(new Date(memory.start_time));
  $("forget-to").value = localInput(new Date(memory.end_time));
}

// A misnamed entity ("Marko" for "Marco"): PATCH /entities/{id} renames it, or merges it into the entity that
// already has that name; questions use the correction from then on.
function entityItem(entity, memoryId) {
  const item = el("li", "entity");
  item.append(el("span", "name", entity.name));
  const edit = el("button", "inline", "Rename");
  edit.type = "button";
  const form = el("form", "rename");
  form.hidden = true;
  const input = el("input");
  input.value = entity.name;
  input.maxLength = 200;
  input.required = true;
  input.setAttribute("aria-label", `The right name of ${entity.name}`);
  const save = el("button", null, "Save");
  save.type = "submit";
  form.append(input, save);
  edit.addEventListener("click", () => {
    form.hidden = false;
    edit.hidden = true;
    input.focus();
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const note = $("memory-note");
    try {
      const done = await api("PATCH", "/entities/" + encodeURIComponent(entity.id), { name: input.value });
      await showMemory(memoryId);
      note.textContent = done.action === "merge"
        ? `Merged into ${done.name} (also known as ${done.aliases.join(", ")}).`
        : `Renamed to ${done.name}.`;
    } catch (error) {
      note.textContent = `Not corrected: ${error.message}`;
    }
  });
  item.append(edit, form);
  return item;
}

function route() {
  $("memory-note").textContent = "";
  const match = /^#memory\/(.+)$/.exec(location.hash);
  if (match && token()) showMemory(decodeURIComponent(match[1]));
  else $("memory").hidden = true;
}

// ---- chat ----------------------------------------------------------------------------------------------------

function citationItem(citation) {
  const item = el("li", "citation");
  const scale = SCALE_NAMES[citation.duration_seconds] || citation.memory_type;
  const when = citation.start_time ? `${clock(citation.start_time)}–${clock(citation.end_time)}` : citation.id;
  const label = `${when} · ${scale}${citation.caption_source ? " · " + citation.caption_source : ""}`;
  if (citation.segment_id && UUID.test(citation.segment_id)) {
    const link = el("a", null, label);
    link.href = "#memory/" + encodeURIComponent(citation.segment_id);
    item.append(link);
  } else {
    item.textContent = `${label} (${citation.memory_type} fact)`;
  }
  return item;
}

async function ask(event) {
  event.preventDefault();
  const question = $("question").value.trim();
  if (!question) return;
  const log = $("chat-log");
  log.append(el("li", "question", question));
  $("question").value = "";
  const answer = el("li", "answer", "…");
  log.append(answer);
  try {
    const body = { question };
    if (chatId) body.chat_id = chatId;
    const reply = await api("POST", "/memories/chat/verbose", body);
    chatId = reply.chat_id || chatId;
    answer.replaceChildren(el("p", null, reply.answer));
    const citations = (reply.trace && reply.trace.citations) || [];
    if (citations.length) {
      const list = el("ol", "citations");
      for (const citation of citations) list.append(citationItem(citation));
      answer.append(list);
    }
  } catch (error) {
    answer.className = "answer error";
    answer.textContent = error.status === 503 ? "The model is starting; ask again in a minute." : error.message;
  }
}

// ---- forget a span -------------------------------------------------------------------------------------------

async function forget(event) {
  event.preventDefault();
  const result = $("forget-result");
  const from = new Date($("forget-from").value);
  const to = new Date($("forget-to").value);
  if (Number.isNaN(from.getTime()) || Number.isNaN(to.getTime()) || !(from < to)) {
    result.textContent = "Pick a span whose end is after its start.";
    return;
  }
  result.textContent = "Forgetting…";
  try {
    const query = new URLSearchParams({ from: from.toISOString(), to: to.toISOString() });
    const done = await api("DELETE", "/memories?" + query);
    // The route answers what each store lost (`deleted`: {"postgres.windows": 12, ...}), never content.
    const deleted = done && typeof done.deleted === "object" && done.deleted ? done.deleted : {};
    const counts = Object.entries(deleted)
      .filter(([, value]) => typeof value === "number" && value > 0)
      .map(([store, value]) => `${store}: ${value}`);
    result.textContent = `Forgotten ${clock(from.toISOString())}–${clock(to.toISOString())}.` +
      (counts.length ? ` Erased ${counts.join(", ")}.` : " Nothing was recorded then.");
    $("forget-confirm").checked = false;
    if (location.hash.startsWith("#memory/")) location.hash = "";
    loadDay();
  } catch (error) {
    result.textContent = error.status === 404 ? "This server cannot forget a span yet." : `Not forgotten: ${error.message}`;
  }
}

// ---- start ---------------------------------------------------------------------------------------------------

function start() {
  const requested = new URLSearchParams(location.search).get("day");
  $("day").value = requested && /^\d{4}-\d{2}-\d{2}$/.test(requested) ? requested : localDay(new Date());
  $("sign-in-form").addEventListener("submit", signIn);
  $("sign-out").addEventListener("click", () => signOut(""));
  $("day").addEventListener("change", loadDay);
  $("day-before").addEventListener("click", () => stepDay(-1));
  $("day-after").addEventListener("click", () => stepDay(1));
  $("search").addEventListener("input", applySearch);
  $("chat-form").addEventListener("submit", ask);
  $("forget-form").addEventListener("submit", forget);
  $("memory-close").addEventListener("click", () => {
    location.hash = "";
  });
  window.addEventListener("hashchange", route);
  showSignedIn(Boolean(token()));
  if (token()) {
    loadDay();
    watchEvents();
    route();
  }
}

start();
