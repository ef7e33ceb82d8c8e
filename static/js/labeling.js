// The labeling page: keys, clicks and range selection label the grid; every change is kept in a
// pending map (also in localStorage, so that a reload or a login keeps it) until the server has
// stored it. The status line is computed from that map alone: it never says "saved" while a label
// is not stored.
(() => {
  const page = document.getElementById("label-page");
  if (!page) return;
  const grid = document.getElementById("grid");
  const detail = document.getElementById("detail");
  const status = document.getElementById("save-status");
  const help = document.getElementById("help");
  const lightbox = document.getElementById("lightbox");
  const submitButton = document.getElementById("submit");
  const locked = page.dataset.locked === "1";
  const NAMES = {
    relevant: "Relevant", not_relevant: "Not relevant", unsure: "Unsure", "": "Not labeled yet",
    undecided: "Undecided: annotators disagree (waiting for adjudication)",
  };
  const STORE_KEY = `quire:pending:${page.dataset.queryId}`;
  const BATCH = 200; // labels per request at most
  const FIGURES_AFTER_MS = 1500; // the side pane's figures are asked for again this long after the last save

  let tiles = [];             // the grid's tiles, in order (refreshed after each htmx swap)
  let indexOf = new Map();    // tile -> its index
  let selected = -1;
  let anchor = null;          // start of a shift-range, or null
  let lookingSince = performance.now(); // when the selected image was shown: its lead time starts here
  let columnsCache = 0;
  const undo = [];            // batches [{id, before}], newest last; a Submit or a range is one batch
  // image id -> {value, source, leadTime, state: "queued" | "sending" | "retry" | "refused", error, attempts}
  const pending = new Map();
  let sessionEnded = false;
  let retryTimer = null;
  // A ranking that learns (feedback, image, fusion) re-ranks the unlabeled tiles below the view after
  // this many labels, once they are stored (the server ranks from stored labels only).
  const adaptive = page.dataset.ranking !== "text";
  const RERANK_EVERY = Number(page.dataset.rerankEvery || 25);
  let labelsSinceRerank = 0;
  let reranking = false;

  // --- the grid -------------------------------------------------------------------------------

  function collect() {
    tiles = Array.from(grid.querySelectorAll(".tile"));
    indexOf = new Map(tiles.map((tile, index) => [tile, index]));
    columnsCache = 0;
    for (const tile of tiles) markUnsaved(tile);
  }

  function tileOf(id) { return grid.querySelector(`.tile[data-image-id="${CSS.escape(String(id))}"]`); }

  function columns() {
    // One style read, cached until the grid changes or the window resizes (no layout per key).
    if (!columnsCache) {
      columnsCache = getComputedStyle(grid).gridTemplateColumns.split(" ").filter(Boolean).length || 1;
    }
    return columnsCache;
  }

  function select(index, { scroll = true, extend = false } = {}) {
    if (!tiles.length) return;
    const next = Math.max(0, Math.min(index, tiles.length - 1));
    if (extend) {
      if (anchor === null) anchor = selected < 0 ? next : selected;
    } else if (anchor !== null) {
      anchor = null;
      clearRange();
    }
    if (next !== selected) {
      tiles[selected]?.classList.remove("selected");
      lookingSince = performance.now();
    }
    selected = next;
    const tile = tiles[selected];
    tile.classList.add("selected");
    if (anchor !== null) drawRange();
    if (scroll) tile.scrollIntoView({ block: "nearest" });
    showDetail(tile);
  }

  function rangeIndices() {
    if (anchor === null) return [selected];
    const [a, b] = anchor < selected ? [anchor, selected] : [selected, anchor];
    return Array.from({ length: b - a + 1 }, (_, i) => a + i);
  }

  let drawn = [];
  function clearRange() { drawn.forEach((tile) => tile.classList.remove("in-range")); drawn = []; }
  function drawRange() {
    clearRange();
    drawn = rangeIndices().map((i) => tiles[i]);
    drawn.forEach((tile) => tile.classList.add("in-range"));
  }

  function showDetail(tile) {
    const d = tile.dataset;
    const row = (name, value) => (value ? `<dt>${name}</dt><dd>${escape(value)}</dd>` : "");
    const state = pending.get(d.imageId);
    const note = state ? ` <span class="muted">(${state.state === "refused" ? "not saved" : "saving"})</span>` : "";
    detail.innerHTML = `<img src="${d.full}" alt="image ${escape(d.imageId)}">
      <p class="label-name label-${d.label || "none"}">${NAMES[d.label] ?? ""}${note}</p>
      <dl>${row("Species", d.common)}${row("Scientific name", d.scientific)}${row("Observed", d.date)}
      ${row("Place", d.place)}${row("License", d.license)}${row("Rights holder", d.rights)}
      ${row("Rank", d.rank)}${row("Score", d.score)}${row("Image id", d.imageId)}</dl>${why(d.why)}${stackNote(tile)}
      <p class="muted">f: the whole image · <button type="button" class="link" data-action="like" title="l">More like this</button></p>`;
  }

  function why(json) {
    // Structured rerank: each sub-question with the model's P(yes): why the image ranks where it does.
    if (!json) return "";
    let pairs = [];
    try { pairs = JSON.parse(json); } catch (error) { return ""; }
    const items = pairs.map(([question, p]) =>
      `<li>${escape(question)} <strong>${p >= 0.5 ? "yes" : "no"}</strong> <span class="muted">(${Number(p).toFixed(2)})</span></li>`);
    return `<div class="why"><h4>The vision model's answers</h4><ol>${items.join("")}</ol></div>`;
  }

  function escape(text) {
    return String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
  }

  // --- labeling -------------------------------------------------------------------------------

  function label(targets, value, source) {
    if (locked) return say("This query is locked by staff: labels cannot change.", "error");
    const batch = [];
    const leadTime = Math.round(performance.now() - lookingSince);
    lookingSince = performance.now();
    for (const tile of targets) {
      batch.push({ id: tile.dataset.imageId, before: tile.dataset.label });
      apply(tile, value);
      want(tile.dataset.imageId, value, source, targets.length === 1 ? leadTime : null);
      // A stack's look-alikes get the same label, each its own (and its own history); they are unlabeled.
      for (const member of stackOf(tile)) {
        batch.push({ id: member, before: "" });
        want(member, value, source, null);
      }
    }
    undo.push(batch);
    labelsSinceRerank += targets.length;
    afterChange();
  }

  function stackOf(tile) { return (tile.dataset.stack || "").split(" ").filter(Boolean); }

  function stackNote(tile) {
    const count = stackOf(tile).length;
    if (!count) return "";
    return `<p class="stack-note"><strong>${count} look-alike${count === 1 ? "" : "s"}</strong> wait behind this image
      (near-identical: you called one like it not relevant). A label key labels ${count === 1 ? "it" : "them all"} too,
      each with its own history; <kbd>e</kbd> shows ${count === 1 ? "it" : "them"} as tiles of their own.</p>`;
  }

  // e: a stack's look-alikes become tiles of their own, right after it, each labeled on its own from then on.
  function expandStack(tile) {
    const members = stackOf(tile);
    if (!members.length) return say("This image has no look-alikes waiting behind it.", "error");
    const url = (name, id) => page.dataset[name].replace(/\/0\//, `/${encodeURIComponent(id)}/`);
    let after = tile;
    for (const id of members) {
      const figure = document.createElement("figure");
      figure.className = "tile look-alike";
      Object.assign(figure.dataset, { imageId: id, label: "", rank: "", full: url("fullUrl", id) });
      figure.innerHTML = `<img src="${url("thumbUrl", id)}" alt="image ${escape(id)}" loading="lazy">
        <figcaption>look-alike of #${escape(tile.dataset.rank)}</figcaption>`;
      after.after(figure);
      after = figure;
    }
    delete tile.dataset.stack;
    tile.classList.remove("stacked");
    tile.querySelector(".stack-badge")?.remove();
    collect();
    say(`${members.length} look-alike${members.length === 1 ? "" : "s"} shown: each is labeled on its own now.`, "");
  }

  function apply(tile, value) {
    tile.dataset.label = value;
    if (tiles[selected] === tile) showDetail(tile);
  }

  function want(id, value, source, leadTime) {
    pending.set(id, { value, source, leadTime, state: "queued", attempts: 0 });
  }

  function undoLast() {
    const batch = undo.pop();
    if (!batch) return;
    for (const { id, before } of batch) {
      const tile = tileOf(id);
      if (tile) apply(tile, before);
      want(id, before, "keyboard", null); // an undo is no decision: no lead time
    }
    const first = tileOf(batch[0].id);
    if (first) select(indexOf.get(first));
    afterChange();
  }

  function afterChange() {
    remember();
    flush();
    refresh();
  }

  // --- saving ---------------------------------------------------------------------------------

  function csrfToken() {
    // Read fresh for every request: logging in again in another tab rotates it.
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  async function post(url, body) {
    return fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken(), Accept: "application/json" },
      body: JSON.stringify(body),
    });
  }

  async function flush() {
    const ready = [...pending].filter(([, p]) => p.state === "queued").slice(0, BATCH);
    if (!ready.length) return;
    for (const [, p] of ready) p.state = "sending";
    refresh();
    const sent = ready.map(([id, p]) => ({ id, p }));
    let response = null;
    try {
      const token = csrfToken();
      // Each label says how it was given (a batch mixes clicks and keys) and how long its image was looked at.
      const body = {
        labels: sent.map(({ id, p }) => ({
          image: Number(id), value: p.value, lead_time_ms: p.leadTime,
          source: p.source === "click" ? "click" : "keyboard",
        })),
      };
      response = await post(page.dataset.saveUrl, body);
      if (response.status === 403 && csrfToken() !== token) response = await post(page.dataset.saveUrl, body);
    } catch (error) {
      response = null; // the server could not be reached
    }
    const answer = response ? await response.json().catch(() => ({})) : {};
    for (const { id, p } of sent) {
      if (pending.get(id) !== p) continue; // changed again meanwhile: the newer value goes next
      if (response && response.ok) {
        pending.delete(id);
      } else if (response && response.status === 401) {
        sessionEnded = true;
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
    if (response && response.ok) {
      sessionEnded = false;
      showCounts(answer.counts);
      refreshFigures();
    }
    remember();
    refresh();
    if ([...pending.values()].some((p) => p.state === "queued")) flush();
    scheduleRetry();
    if (!pending.size) maybeRerank();
  }

  function maybeRerank() {
    if (!adaptive || reranking || labelsSinceRerank < RERANK_EVERY) return;
    // Tiles the annotator may be looking at stay: the selection and everything up to the bottom of the
    // view. Below it, the unlabeled tiles are replaced by the best of the ranking from every label so far.
    const bottom = window.innerHeight;
    let cut = tiles.findIndex((tile, index) => index > selected && tile.getBoundingClientRect().top > bottom);
    if (cut < 0) return; // every tile is in view: the next "load more" re-ranks
    const below = tiles.slice(cut).filter((tile) => !tile.dataset.label && !pending.has(tile.dataset.imageId));
    if (!below.length) return;
    labelsSinceRerank = 0;
    reranking = true;
    below.forEach((tile) => tile.remove());
    collect();
    const kept = tiles.map((tile) => tile.dataset.imageId);
    htmx
      .ajax("POST", page.dataset.resultsUrl + `&offset=${tiles.length}`, {
        target: "#grid",
        swap: "beforeend",
        values: { shown: kept, count: below.length },
        headers: { "X-CSRFToken": csrfToken() },
      })
      .then(() => {
        document.getElementById("rerank-status").textContent = `re-ranked ${below.length} images below from your labels`;
      })
      .finally(() => (reranking = false));
  }

  function scheduleRetry() {
    if (retryTimer) return;
    const waiting = [...pending.values()].filter((p) => p.state === "retry");
    if (!waiting.length) return;
    const attempts = Math.max(...waiting.map((p) => p.attempts));
    retryTimer = setTimeout(() => {
      retryTimer = null;
      for (const p of pending.values()) if (p.state === "retry") p.state = "queued";
      flush();
    }, Math.min(10000, 500 * 2 ** attempts));
  }

  function remember() {
    const entries = [...pending].map(([id, p]) => [id, { value: p.value, source: p.source, leadTime: p.leadTime }]);
    try {
      if (entries.length) localStorage.setItem(STORE_KEY, JSON.stringify(entries));
      else localStorage.removeItem(STORE_KEY);
    } catch (error) { /* storage full or off: the page still warns before it closes */ }
  }

  function restore() {
    let entries = [];
    try { entries = JSON.parse(localStorage.getItem(STORE_KEY) || "[]"); } catch (error) { entries = []; }
    for (const [id, p] of entries) {
      pending.set(id, { ...p, state: "queued", attempts: 0 });
      const tile = tileOf(id);
      if (tile) tile.dataset.label = p.value;
    }
    if (entries.length) flush();
  }

  // The side pane's not-relevant run and recall estimate follow the labels: asked for again once saving
  // has paused for a moment (not on every key: the run is a pass over the query's labels).
  let figuresTimer = null;
  function refreshFigures() {
    clearTimeout(figuresTimer);
    figuresTimer = setTimeout(() => {
      const figures = document.getElementById("side-figures");
      if (figures) htmx.ajax("GET", figures.dataset.url, { target: figures, swap: "outerHTML" });
    }, FIGURES_AFTER_MS);
  }

  function showCounts(counts) {
    if (!counts) return;
    document.getElementById("query-counts").textContent =
      `${counts.labeled} labeled, ${counts.relevant} relevant, ${counts.unsure} unsure`;
  }

  function say(text, kind) {
    status.textContent = text;
    status.className = kind;
  }

  function markUnsaved(tile) {
    const p = pending.get(tile.dataset.imageId);
    tile.classList.toggle("unsaved", Boolean(p && (p.state === "retry" || p.state === "refused")));
  }

  let lastMarked = new Set();
  function refresh() {
    const relevant = tiles.reduce((n, t) => n + (t.dataset.label === "relevant"), 0);
    document.getElementById("shown-count").textContent = `${relevant} relevant of ${tiles.length} shown`;
    // Only tiles whose unsaved mark may have changed are touched: pending ones and last time's.
    const now = new Set(pending.keys());
    for (const id of new Set([...now, ...lastMarked])) { const tile = tileOf(id); if (tile) markUnsaved(tile); }
    lastMarked = now;
    updateLabeledDownTo();
    const all = [...pending.values()];
    const refused = all.filter((p) => p.state === "refused");
    const waiting = all.filter((p) => p.state === "retry");
    if (sessionEnded) {
      status.innerHTML = `Your session ended: <a href="${page.dataset.loginUrl}">log in again</a>; ${all.length} label${all.length === 1 ? " is" : "s are"} waiting and will be saved after you log in.`;
      status.className = "error";
    } else if (refused.length) {
      say(`${refused.length} label${refused.length === 1 ? "" : "s"} not saved: ${refused[0].error}`, "error");
    } else if (waiting.length) {
      say(`${waiting.length} unsaved (${waiting[0].error}); retrying…`, "error");
    } else if (all.length) {
      say("Saving…", "saving");
    } else {
      say("All changes saved", "saved");
    }
  }

  function updateLabeledDownTo() {
    // Ranks 1..N all labeled, from the tiles shown; the server's figure counts when they go deeper.
    const box = document.getElementById("labeled-down-to");
    if (adaptive || !box || !tiles.length || tiles[0].dataset.rank !== "1") return; // text ranking's ranks only
    const firstUnlabeled = tiles.find((t) => !t.dataset.label);
    const shown = firstUnlabeled ? Number(firstUnlabeled.dataset.rank) - 1 : Number(tiles[tiles.length - 1].dataset.rank);
    const server = Number(page.dataset.labeledDownTo || 0);
    box.textContent = String(firstUnlabeled ? shown : Math.max(shown, server));
  }

  // --- Submit, load more, zoom ------------------------------------------------------------------

  async function submitShown() {
    if (locked || submitButton.disabled) return;
    const limit = Number(page.dataset.submitLimit || 2000); // the server's cap on one Submit
    const all = tiles.filter((t) => !t.dataset.label && !pending.has(t.dataset.imageId));
    if (!all.length) return say("Nothing to submit: every image shown is labeled.", "saved");
    const unlabeled = all.slice(0, limit); // from the top: one Submit at most `limit`, the rest on the next
    submitButton.disabled = true;
    say("Submitting…", "saving");
    let response = null;
    try {
      response = await post(page.dataset.submitUrl, { images: unlabeled.map((t) => Number(t.dataset.imageId)) });
    } catch (error) {
      response = null;
    }
    submitButton.disabled = false;
    const answer = response ? await response.json().catch(() => ({})) : {};
    if (!response) {
      return say("Submit did not reach the server: nothing is marked. Try again.", "error");
    }
    if (response.status === 401) {
      sessionEnded = true;
      return refresh();
    }
    if (!response.ok) {
      return say(`Submit refused, nothing was changed: ${answer.error || response.status}`, "error");
    }
    const written = new Set((answer.labeled || []).map(String));
    const batch = [];
    for (const tile of unlabeled) {
      if (!written.has(tile.dataset.imageId)) continue; // labeled meanwhile by someone else: theirs stands
      batch.push({ id: tile.dataset.imageId, before: "" });
      apply(tile, "not_relevant");
    }
    if (batch.length) undo.push(batch);
    showCounts(answer.counts);
    refresh();
    if (tiles[selected]) showDetail(tiles[selected]);
    const rest = all.length - unlabeled.length;
    const more = rest > 0 ? `; ${rest} more shown below: press Submit again for them` : "";
    say(`Submitted: ${written.size} image${written.size === 1 ? "" : "s"} marked not relevant (z undoes it)${more}`, "saved");
  }

  let selectFirstNew = null;
  function loadMore() {
    const button = document.querySelector('#more [data-action="load-more"]');
    if (!button) return false;
    selectFirstNew = tiles.length;
    button.click();
    return true;
  }

  function zoom(tile) {
    const img = lightbox.querySelector("img");
    img.src = tile.dataset.full;
    img.alt = `image ${tile.dataset.imageId}, full size`;
    lightbox.querySelector("figcaption").textContent =
      `#${tile.dataset.rank} · ${tile.dataset.common || tile.dataset.scientific || "no taxon"} · ${NAMES[tile.dataset.label]}`;
    lightbox.hidden = false;
  }

  function confirmPrelabel(tile) {
    // The judge panel only proposes; this key makes its proposal the annotator's label.
    const value = { accept: "relevant", reject: "not_relevant" }[tile.dataset.prelabel];
    if (!value) return say("The judge panel has no verdict on this image.", "saved");
    label([tile], value, "keyboard");
  }

  function moreLikeThis(tile) {
    // The same search (text, filters) ranked like this image; labels given so far stay with the query.
    const params = new URLSearchParams(window.location.search);
    // The ranking to go back to when the last "like" chip is removed.
    if (!params.getAll("like").length) params.set("before", page.dataset.ranking);
    params.set("ranking", "image");
    params.delete("like");
    params.delete("offset");
    params.append("like", tile.dataset.imageId);
    window.location.search = params.toString();
  }

  function nextUnlabeled() {
    for (let i = selected + 1; i < tiles.length; i += 1) {
      if (!tiles[i].dataset.label) return select(i);
    }
    if (!loadMore()) say("No unlabeled image below this one.", "saved");
  }

  // --- keys and clicks ------------------------------------------------------------------------

  const CONTROLS = "input, select, textarea, button, a[href], summary, [contenteditable]";

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    for (const overlay of [help, lightbox]) {
      if (!overlay.hidden) {
        // An open overlay takes every key, wherever the focus was left; Esc closes it.
        if (event.key === "Escape" || event.key === "?" || event.key === "f") overlay.hidden = true;
        event.preventDefault();
        return;
      }
    }
    if (event.target.closest(CONTROLS)) {
      // Keys belong to the control; Esc leaves it (a text box, a button, a link) for the grid.
      if (event.key === "Escape") {
        event.preventDefault(); // a search box would otherwise empty itself
        event.target.blur();
      }
      return;
    }
    const tile = tiles[selected];
    const targets = () => rangeIndices().map((i) => tiles[i]).filter(Boolean);
    const extend = event.shiftKey;
    const actions = {
      ArrowRight: () => (selected === tiles.length - 1 && !extend ? loadMore() : select(selected + 1, { extend })),
      ArrowLeft: () => select(selected - 1, { extend }),
      ArrowDown: () => select(selected + columns(), { extend }),
      ArrowUp: () => select(selected - columns(), { extend }),
      Enter: () => tile && label(targets(), tile.dataset.label === "relevant" ? "not_relevant" : "relevant", "keyboard"),
      " ": () => tile && label(targets(), tile.dataset.label === "relevant" ? "not_relevant" : "relevant", "keyboard"),
      1: () => tile && label(targets(), "relevant", "keyboard"),
      0: () => tile && label(targets(), "not_relevant", "keyboard"),
      u: () => tile && label(targets(), "unsure", "keyboard"),
      z: undoLast,
      n: nextUnlabeled,
      f: () => tile && zoom(tile),
      l: () => tile && moreLikeThis(tile),
      e: () => tile && expandStack(tile),
      c: () => tile && confirmPrelabel(tile),
      m: loadMore,
      s: submitShown,
      "?": () => (help.hidden = false),
      Escape: () => select(selected),
    };
    const action = actions[event.key.length === 1 ? event.key.toLowerCase() : event.key];
    if (action && !(event.key.length === 1 && event.shiftKey && event.key !== "?")) {
      event.preventDefault();
      action();
    }
  });

  grid.addEventListener("click", (event) => {
    const tile = event.target.closest(".tile");
    if (!tile) return;
    const index = indexOf.get(tile);
    if (event.shiftKey) {
      select(index, { scroll: false, extend: true });
      return;
    }
    if (event.altKey) {  // look at it in the side pane, without labeling it
      select(index, { scroll: false });
      return;
    }
    select(index, { scroll: false });
    label([tile], tile.dataset.label === "relevant" ? "not_relevant" : "relevant", "click");
  });
  submitButton.addEventListener("click", submitShown);
  detail.addEventListener("click", (event) => {
    if (event.target.closest('[data-action="like"]') && tiles[selected]) moreLikeThis(tiles[selected]);
  });
  document.getElementById("help-button").addEventListener("click", () => (help.hidden = false));
  help.addEventListener("click", () => (help.hidden = true));
  lightbox.addEventListener("click", () => (lightbox.hidden = true));

  // Tile size, remembered in this browser.
  const size = document.getElementById("tile-size");
  const setSize = (px) => { grid.style.setProperty("--tile", `${px}px`); columnsCache = 0; };
  size.value = localStorage.getItem("quire:tile-size") || size.value;
  setSize(size.value);
  size.addEventListener("input", () => { setSize(size.value); localStorage.setItem("quire:tile-size", size.value); });
  window.addEventListener("resize", () => (columnsCache = 0));

  // Taxon filters: a suggestion becomes a chip and the search runs again; × removes one.
  const form = document.getElementById("search");
  const taxonBox = form.querySelector('input[type="text"][name="taxon"]');
  const chooseSuggestion = (choice) => {
    const chip = document.createElement("input");
    Object.assign(chip, { type: "hidden", name: "taxon", value: choice.dataset.value });
    form.querySelector(".chips").append(chip);
    taxonBox.value = "";
    form.requestSubmit();
  };
  document.getElementById("suggestions").addEventListener("click", (event) => {
    const choice = event.target.closest(".suggestion");
    if (choice) chooseSuggestion(choice);
  });
  taxonBox.addEventListener("keydown", (event) => {
    // ↓ from the box moves into the suggestions; Enter there picks one (a button's own action).
    if (event.key === "ArrowDown") {
      const first = document.querySelector("#suggestions .suggestion");
      if (first) { event.preventDefault(); first.focus(); }
    }
  });
  document.getElementById("suggestions").addEventListener("keydown", (event) => {
    const items = Array.from(document.querySelectorAll("#suggestions .suggestion"));
    const at = items.indexOf(event.target);
    if (event.key === "ArrowDown" && at >= 0) { event.preventDefault(); items[Math.min(at + 1, items.length - 1)].focus(); }
    if (event.key === "ArrowUp" && at >= 0) { event.preventDefault(); (at ? items[at - 1] : taxonBox).focus(); }
  });
  form.querySelector(".chips").addEventListener("click", (event) => {
    if (!event.target.classList.contains("remove")) return;
    event.target.closest(".chip").remove();
    form.requestSubmit();
  });
  form.querySelectorAll(".like .remove").forEach((button) =>
    button.addEventListener("click", () => {
      button.closest(".like").remove();
      if (!form.querySelector(".like")) {  // the last one: back to the ranking before "more like this"
        const before = new URLSearchParams(window.location.search).get("before");
        const known = [...form.elements.ranking.options].some((option) => option.value === before);
        form.elements.ranking.value = known && before !== "image" ? before : "text";
      }
      form.requestSubmit();
    }));
  form.addEventListener("submit", () => { if (!taxonBox.value.trim()) taxonBox.disabled = true; });
  // A ranking that learns is asked with POST: the images on the page must not come again.
  document.body.addEventListener("htmx:configRequest", (event) => {
    if (!event.detail.elt.matches?.('[data-adaptive="1"]')) return;
    event.detail.parameters.shown = tiles.map((tile) => tile.dataset.imageId);
    event.detail.headers["X-CSRFToken"] = csrfToken();
  });
  // hide labeled and the page size apply when changed.
  form.querySelectorAll("[data-apply]").forEach((control) => control.addEventListener("change", () => form.requestSubmit()));

  window.addEventListener("beforeunload", (event) => {
    if (pending.size) { event.preventDefault(); event.returnValue = ""; }
  });
  document.body.addEventListener("htmx:afterSwap", (event) => {
    if (event.detail.target !== grid) return;
    collect();
    refresh();
    if (selectFirstNew !== null && selectFirstNew < tiles.length) select(selectFirstNew);
    selectFirstNew = null;
  });

  collect();
  restore();
  if (tiles.length) select(0, { scroll: false });
  refresh();
})();
