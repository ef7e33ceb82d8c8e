// The labeling page's save queue (static/js/labeling/save-queue.js), run by Node's own test runner against a
// server of answers the test scripts: what the page may claim of a label depends on these rules alone.
import assert from "node:assert/strict";
import { test } from "node:test";

import { BATCH, MAX_RETRY_MS, SaveQueue, describe, isUnsaved, retryDelay } from "../../static/js/labeling/save-queue.js";

// A server that answers each request with the next scripted reply (a status, or "down" for no answer), and
// records every body it was sent.
function server(...replies) {
  const sent = [];
  const post = async (body) => {
    sent.push(body);
    const reply = replies.length > 1 ? replies.shift() : replies[0];
    if (reply === "down") throw new TypeError("Failed to fetch");
    const status = typeof reply === "number" ? reply : reply.status;
    const answer = typeof reply === "number" ? {} : reply.answer;
    return { ok: status >= 200 && status < 300, status, json: async () => answer };
  };
  return { post, sent };
}

function memoryStorage() {
  const items = new Map();
  return {
    items,
    getItem: (key) => (items.has(key) ? items.get(key) : null),
    setItem: (key, value) => items.set(key, String(value)),
    removeItem: (key) => items.delete(key),
  };
}

// A clock the test advances by hand: timers run only when it says.
function manualClock() {
  const timers = [];
  return {
    timers,
    setTimer: (fn, ms) => { timers.push({ fn, ms }); return timers.length; },
    async fire() { const timer = timers.shift(); timer.fn(); await Promise.resolve(); },
  };
}

test("a label is 'saving' until the server stores it, then 'all changes saved'", async () => {
  const { post, sent } = server({ status: 200, answer: { counts: { labeled: 1 } } });
  const saved = [];
  const queue = new SaveQueue({ post, onSaved: (answer) => saved.push(answer) });
  queue.want(7, "relevant", "keyboard", 1200);
  assert.deepEqual(describe(queue), { kind: "saving", text: "Saving…" });
  const flushing = queue.flush();
  assert.equal(queue.get(7).state, "sending");
  assert.equal(describe(queue).text, "Saving…");
  await flushing;
  assert.deepEqual(sent, [{ labels: [{ image: 7, value: "relevant", lead_time_ms: 1200, source: "keyboard" }] }]);
  assert.equal(queue.size, 0);
  assert.deepEqual(describe(queue), { kind: "saved", text: "All changes saved" });
  assert.deepEqual(saved, [{ counts: { labeled: 1 } }]);
});

test("a refused label is kept and said, with the server's sentence", async () => {
  const { post } = server({ status: 400, answer: { error: "the label: value: \"maybe\" is not a valid choice." } });
  const queue = new SaveQueue({ post });
  queue.want("3", "maybe", "click");
  await queue.flush();
  assert.equal(queue.get(3).state, "refused");
  assert.ok(isUnsaved(queue.get(3)));
  assert.deepEqual(describe(queue), { kind: "error", text: "1 label not saved: the label: value: \"maybe\" is not a valid choice." });
});

test("a server away or failing is retried, slower each time, until it stores the label", async () => {
  const clock = manualClock();
  const { post, sent } = server("down", 503, 200);
  const queue = new SaveQueue({ post, setTimer: clock.setTimer });
  queue.want(5, "not_relevant", "keyboard");
  await queue.flush();
  assert.equal(queue.get(5).state, "retry");
  assert.deepEqual(describe(queue), { kind: "error", text: "1 unsaved (the server cannot be reached); retrying…" });
  assert.deepEqual(clock.timers.map((t) => t.ms), [retryDelay(1)]);
  await clock.fire();
  await queue.flush();
  assert.equal(describe(queue).text, "1 unsaved (the server answered 503); retrying…");
  assert.deepEqual(clock.timers.map((t) => t.ms), [retryDelay(2)]);
  assert.ok(retryDelay(2) > retryDelay(1));
  await clock.fire();
  await queue.flush();
  assert.equal(queue.size, 0);
  assert.equal(sent.length, 3);
  assert.equal(describe(queue).text, "All changes saved");
  assert.equal(retryDelay(50), MAX_RETRY_MS);
});

test("an ended session keeps every label waiting and says so; a later save clears it", async () => {
  const clock = manualClock();
  const { post } = server(401, 200);
  const queue = new SaveQueue({ post, setTimer: clock.setTimer });
  queue.want(1, "relevant", "click");
  queue.want(2, "unsure", "click");
  await queue.flush();
  assert.equal(queue.sessionEnded, true);
  const line = describe(queue);
  assert.equal(line.sessionEnded, true);
  assert.match(line.text, /2 labels are waiting/);
  await clock.fire();
  await queue.flush();
  assert.equal(queue.sessionEnded, false);
  assert.equal(queue.size, 0);
});

test("a label changed while its first value is on the way is sent again with the new value", async () => {
  let release;
  const sent = [];
  const post = (body) => {
    sent.push(body);
    if (sent.length === 1) return new Promise((resolve) => { release = () => resolve({ ok: true, status: 200, json: async () => ({}) }); });
    return Promise.resolve({ ok: true, status: 200, json: async () => ({}) });
  };
  const queue = new SaveQueue({ post });
  queue.want(9, "relevant", "keyboard");
  const flushing = queue.flush();
  await Promise.resolve();
  queue.want(9, "not_relevant", "keyboard"); // the annotator changed their mind mid-flight
  assert.equal(queue.flush(), flushing, "one flush at a time: the new value waits for the batch on the way");
  release();
  await flushing;
  assert.deepEqual(sent.map((body) => body.labels[0].value), ["relevant", "not_relevant"]);
  assert.equal(queue.size, 0);
});

test("many labels go in batches of at most BATCH, and the queue is idle only when all are stored", async () => {
  const { post, sent } = server(200);
  let idle = 0;
  const queue = new SaveQueue({ post, onIdle: () => (idle += 1) });
  for (let id = 1; id <= 2 * BATCH + 50; id += 1) queue.want(id, "not_relevant", "keyboard");
  await queue.flush();
  assert.deepEqual(sent.map((body) => body.labels.length), [BATCH, BATCH, 50]);
  assert.equal(new Set(sent.flatMap((body) => body.labels.map((l) => l.image))).size, 2 * BATCH + 50);
  assert.equal(idle, 1);
});

test("what waits survives a reload: remembered in storage, restored and queued again", async () => {
  const storage = memoryStorage();
  const first = new SaveQueue({ post: server("down").post, storage, key: "quire:pending:4", setTimer: () => 1 });
  first.want(11, "relevant", "click", 800);
  first.want(12, "unsure", "keyboard");
  await first.flush();
  assert.deepEqual(JSON.parse(storage.getItem("quire:pending:4")).map(([id]) => id), ["11", "12"]);

  const { post, sent } = server(200);
  const second = new SaveQueue({ post, storage, key: "quire:pending:4" });
  assert.deepEqual(second.restore(), [["11", "relevant"], ["12", "unsure"]]);
  assert.equal(second.get(11).state, "queued");
  await second.flush();
  assert.deepEqual(sent[0].labels, [
    { image: 11, value: "relevant", lead_time_ms: 800, source: "click" },
    { image: 12, value: "unsure", lead_time_ms: null, source: "keyboard" },
  ]);
  assert.equal(storage.getItem("quire:pending:4"), null, "nothing waits, nothing is remembered");
});

test("a storage that is full, off or holding garbage loses nothing already queued", async () => {
  const broken = { getItem: () => "{not json", setItem: () => { throw new Error("QuotaExceededError"); }, removeItem: () => {} };
  const queue = new SaveQueue({ post: server(500).post, storage: broken, key: "k", setTimer: () => 1 });
  assert.deepEqual(queue.restore(), []);
  queue.want(1, "relevant", "click");
  await queue.flush();
  assert.equal(queue.get(1).state, "retry");
});
