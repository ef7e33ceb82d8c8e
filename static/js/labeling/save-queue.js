// The save queue of the labeling page: every label the annotator gives waits here until the server has
// stored it. Nothing in it touches the page: the page hands it a way to post, a storage and a timer, and
// reads the status sentence from `describe`, so that the rules below run (and are tested) in Node too.
//
// A label's state: "queued" (to be sent), "sending", "retry" (the server was away or answered 5xx, 429,
// 403 or 401: sent again later, slower each time) or "refused" (4xx for good: kept, and said).

export const BATCH = 200; // labels per request at most
export const MAX_RETRY_MS = 10000;

export class SaveQueue {
  // post(body) -> a Response (or anything with ok, status and json()); it may throw when the server is away.
  // storage: localStorage or a stand-in; key: where this query's pending labels are remembered.
  // onSaved(answer, stored): after a batch the server stored; stored: its [[id, value]]. onChange(): after any change of state. onIdle(): when
  // nothing waits any more. setTimer(fn, ms): setTimeout or a test's clock.
  constructor({ post, storage = null, key = "", onSaved = () => {}, onChange = () => {}, onIdle = () => {},
                setTimer = (fn, ms) => setTimeout(fn, ms) }) {
    Object.assign(this, { post, storage, key, onSaved, onChange, onIdle, setTimer });
    this.pending = new Map(); // image id (a string) -> {value, source, leadTime, state, error, attempts}
    this.sessionEnded = false;
    this.retryTimer = null;
    this.flushing = null;
  }

  get size() { return this.pending.size; }
  has(id) { return this.pending.has(String(id)); }
  get(id) { return this.pending.get(String(id)); }
  ids() { return [...this.pending.keys()]; }

  // A new value for an image: it replaces whatever waited for it (the newest value is the one sent).
  want(id, value, source, leadTime = null) {
    this.pending.set(String(id), { value, source, leadTime, state: "queued", attempts: 0 });
  }

  // Send what is queued, a batch at a time, until nothing is queued; resolves when this round is done.
  flush() {
    if (!this.flushing) this.flushing = this.#flushAll().finally(() => { this.flushing = null; });
    return this.flushing;
  }

  async #flushAll() {
    while ([...this.pending.values()].some((p) => p.state === "queued")) await this.#sendBatch();
    this.#scheduleRetry();
    if (!this.pending.size) this.onIdle();
  }

  async #sendBatch() {
    const sent = [...this.pending].filter(([, p]) => p.state === "queued").slice(0, BATCH);
    for (const [, p] of sent) p.state = "sending";
    this.onChange();
    // Each label says how it was given (a batch mixes clicks and keys) and how long its image was looked at.
    const body = {
      labels: sent.map(([id, p]) => ({
        image: Number(id), value: p.value, lead_time_ms: p.leadTime,
        source: p.source === "click" ? "click" : "keyboard",
      })),
    };
    let response = null;
    try {
      response = await this.post(body);
    } catch (error) {
      response = null; // the server could not be reached
    }
    const answer = response ? await Promise.resolve().then(() => response.json()).catch(() => ({})) : {};
    const stored = []; // [[id, value]] the server stored in this batch (stored, even if changed again since)
    for (const [id, p] of sent) {
      if (response && response.ok) stored.push([id, p.value]);
      if (this.pending.get(id) !== p) continue; // changed again meanwhile: the newer value goes next
      settle(p, response, answer, this);
      if (p.state === "saved") this.pending.delete(id);
    }
    if (response && response.ok) {
      this.sessionEnded = false;
      this.onSaved(answer, stored);
    }
    this.remember();
    this.onChange();
  }

  #scheduleRetry() {
    if (this.retryTimer) return;
    const waiting = [...this.pending.values()].filter((p) => p.state === "retry");
    if (!waiting.length) return;
    const attempts = Math.max(...waiting.map((p) => p.attempts));
    this.retryTimer = this.setTimer(() => {
      this.retryTimer = null;
      for (const p of this.pending.values()) if (p.state === "retry") p.state = "queued";
      this.flush();
    }, retryDelay(attempts));
  }

  // What waits is kept in storage, so that a reload or a login keeps it.
  remember() {
    if (!this.storage) return;
    const entries = [...this.pending].map(([id, p]) => [id, { value: p.value, source: p.source, leadTime: p.leadTime }]);
    try {
      if (entries.length) this.storage.setItem(this.key, JSON.stringify(entries));
      else this.storage.removeItem(this.key);
    } catch (error) { /* storage full or off: the page still warns before it closes */ }
  }

  // What a previous page left unsaved, queued again; returns [[id, value]] for the page to draw.
  restore() {
    let entries = [];
    try { entries = JSON.parse(this.storage?.getItem(this.key) || "[]"); } catch (error) { entries = []; }
    if (!Array.isArray(entries)) entries = [];
    for (const [id, p] of entries) this.pending.set(String(id), { ...p, state: "queued", attempts: 0 });
    return entries.map(([id, p]) => [String(id), p.value]);
  }
}

// One label's fate from the server's answer to its batch.
function settle(p, response, answer, queue) {
  if (response && response.ok) {
    p.state = "saved";
  } else if (response && response.status === 401) {
    queue.sessionEnded = true;
    p.state = "retry";
  } else if (!response || response.status >= 500 || response.status === 429 || response.status === 403) {
    p.state = "retry"; // may succeed later (server back, token renewed): keep trying, slower each time
    p.error = answer.error || (response ? `the server answered ${response.status}` : "the server cannot be reached");
    p.attempts += 1;
  } else {
    p.state = "refused"; // the server refused this value for good: keep it and say so
    p.error = answer.error || `the server answered ${response.status}`;
  }
}

export function retryDelay(attempts) {
  return Math.min(MAX_RETRY_MS, 500 * 2 ** attempts);
}

// The status line, from the queue alone: it never says "saved" while a label is not stored.
// kind: "saved", "saving" or "error"; sessionEnded: the page adds the login link.
export function describe(queue) {
  const all = [...queue.pending.values()];
  const refused = all.filter((p) => p.state === "refused");
  const waiting = all.filter((p) => p.state === "retry");
  const labels = (n) => `${n} label${n === 1 ? "" : "s"}`;
  if (queue.sessionEnded) {
    return {
      kind: "error", sessionEnded: true,
      text: `Your session ended: log in again; ${labels(all.length)} ${all.length === 1 ? "is" : "are"} waiting and will be saved after you log in.`,
    };
  }
  if (refused.length) return { kind: "error", text: `${labels(refused.length)} not saved: ${refused[0].error}` };
  if (waiting.length) return { kind: "error", text: `${waiting.length} unsaved (${waiting[0].error}); retrying…` };
  if (all.length) return { kind: "saving", text: "Saving…" };
  return { kind: "saved", text: "All changes saved" };
}

// Whether a tile shows the unsaved mark: its label is waiting for a retry or was refused.
export function isUnsaved(p) {
  return Boolean(p && (p.state === "retry" || p.state === "refused"));
}
