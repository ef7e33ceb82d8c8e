// The labeling page: keys, clicks and range selection label the grid; every change waits in the save
// queue (save-queue.js, remembered in localStorage so that a reload or a login keeps it) until the server
// has stored it. The status line is computed from that queue alone: it never says "saved" while a label
// is not stored. This module wires the parts: the grid (grid.js), the keys (keymap.js), the search form
// (filters.js) and the side pane (side-pane.js).

import { wireSearchForm } from "./filters.js";
import { Grid } from "./grid.js";
import { actionFor } from "./keymap.js";
import { wireMap } from "./map-panel.js";
import { SaveQueue, describe, isUnsaved } from "./save-queue.js";
import { SidePane } from "./side-pane.js";
import { NAMES, escape, plural } from "./text.js";

const page = document.getElementById("label-page");
if (page) start(page);

function start(page) {
  const detail = document.getElementById("detail");
  const pane = new SidePane({
    detail,
    counts: document.getElementById("query-counts"),
    labeledBox: document.getElementById("labeled-down-to"),
    figures: () => document.getElementById("side-figures"),
    reload: (element) => htmx.ajax("GET", element.dataset.url, { target: element, swap: "outerHTML" }),
    delayMs: 1500, // the side pane's figures are asked for again this long after the last save
  });
  const status = document.getElementById("save-status");
  const help = document.getElementById("help");
  const lightbox = document.getElementById("lightbox");
  const submitButton = document.getElementById("submit");
  const locked = page.dataset.locked === "1";
  // A ranking that learns (feedback, image, fusion) re-ranks the unlabeled tiles below the view after
  // this many labels, once they are stored (the server ranks from stored labels only).
  const adaptive = page.dataset.ranking !== "text";
  const RERANK_EVERY = Number(page.dataset.rerankEvery || 25);
  let labelsSinceRerank = 0;
  let reranking = false;
  let lookingSince = performance.now(); // when the selected image was shown: its lead time starts here
  const undo = []; // batches [{id, before}], newest last; a Submit or a range is one batch
  // A key on a stack of more than STACK_ASK_ABOVE look-alikes labels nothing the first time: it says how many
  // images the key would label and waits for the same key again on the same image (moving away forgets it).
  const STACK_ASK_ABOVE = Number(page.dataset.stackAskAbove || 20);
  let armed = null; // {id, value}: the stack the next identical key labels

  let map = null; // the map panel (map-panel.js), wired once the grid exists
  const grid = new Grid(document.getElementById("grid"), {
    onSelect: (tile, moved) => {
      if (moved) { lookingSince = performance.now(); armed = null; }
      showDetail(tile);
      map?.mark(tile.dataset.imageId);
    },
  });
  const imageUrl = (name, id) => page.dataset[name].replace(/\/0\//, `/${encodeURIComponent(id)}/`);
  map = wireMap(document.getElementById("map-panel"), {
    grid,
    thumbUrl: (id) => imageUrl("thumbUrl", id),
    onPick: (imageId) => {
      const tile = grid.tileOf(String(imageId));
      if (!tile) return false;
      grid.select(grid.indexOf.get(tile));
      return true;
    },
    onRestNotRelevant: (ids) => markNotRelevant(ids),
  });
  const queue = new SaveQueue({
    post: postLabels,
    storage: safeStorage(),
    key: `quire:pending:${page.dataset.queryId}`,
    onSaved: (answer, stored) => { pane.showCounts(answer.counts); pane.figuresLater(); map?.recolour(stored); },
    onChange: refresh,
    onIdle: maybeRerank,
  });

  // --- the grid -------------------------------------------------------------------------------

  function collect() {
    grid.collect();
    for (const tile of grid.tiles) markUnsaved(tile);
  }

  function showDetail(tile) {
    pane.show(tile.dataset, queue.get(tile.dataset.imageId), stackOf(tile).length);
  }

  // --- labeling -------------------------------------------------------------------------------

  function label(targets, value, source) {
    if (locked) return say("This query is locked by staff: labels cannot change.", "error");
    const big = targets.length === 1 && stackOf(targets[0]).length > STACK_ASK_ABOVE ? targets[0] : null;
    if (big && !(armed && armed.id === big.dataset.imageId && armed.value === value)) {
      armed = { id: big.dataset.imageId, value };
      const n = stackOf(big).length;
      return say(`${n} look-alikes wait behind this image: press the same key again to label all ${n + 1} ` +
        `${(NAMES[value] || value).toLowerCase()}, or e to see them first.`, "error");
    }
    armed = null;
    const batch = [];
    const leadTime = Math.round(performance.now() - lookingSince);
    lookingSince = performance.now();
    for (const tile of targets) {
      batch.push({ id: tile.dataset.imageId, before: tile.dataset.label });
      apply(tile, value);
      queue.want(tile.dataset.imageId, value, source, targets.length === 1 ? leadTime : null);
      // A stack's look-alikes get the same label, each its own (and its own history); they are unlabeled.
      for (const member of stackOf(tile)) {
        batch.push({ id: member, before: "" });
        queue.want(member, value, source, null);
      }
    }
    undo.push(batch);
    labelsSinceRerank += targets.length;
    afterChange();
  }

  function stackOf(tile) { return (tile.dataset.stack || "").split(" ").filter(Boolean); }

  // e: a stack's look-alikes become tiles of their own, right after it, each labeled on its own from then on.
  function expandStack(tile) {
    const members = stackOf(tile);
    if (!members.length) return say("This image has no look-alikes waiting behind it.", "error");
    const url = imageUrl;
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
    say(`${plural(members.length, "look-alike")} shown: each is labeled on its own now.`, "");
  }

  function apply(tile, value) {
    tile.dataset.label = value;
    if (grid.current() === tile) showDetail(tile);
  }

  function undoLast() {
    const batch = undo.pop();
    if (!batch) return;
    for (const { id, before } of batch) {
      const tile = grid.tileOf(id);
      if (tile) apply(tile, before);
      queue.want(id, before, "keyboard", null); // an undo is no decision: no lead time
    }
    const first = grid.tileOf(batch[0].id);
    if (first) grid.select(grid.indexOf.get(first));
    afterChange();
  }

  function afterChange() {
    queue.remember();
    queue.flush();
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

  async function postLabels(body) {
    const token = csrfToken();
    const response = await post(page.dataset.saveUrl, body);
    // A login in another tab rotated the token while this was sent: once more with the new one.
    if (response.status === 403 && csrfToken() !== token) return post(page.dataset.saveUrl, body);
    return response;
  }

  function safeStorage() {
    try { return window.localStorage; } catch (error) { return null; }
  }

  function maybeRerank() {
    if (!adaptive || reranking || labelsSinceRerank < RERANK_EVERY) return;
    // Tiles the annotator may be looking at stay: the selection and everything up to the bottom of the
    // view. Below it, the unlabeled tiles are replaced by the best of the ranking from every label so far.
    const bottom = window.innerHeight;
    const cut = grid.tiles.findIndex((tile, index) => index > grid.selected && tile.getBoundingClientRect().top > bottom);
    if (cut < 0) return; // every tile is in view: the next "load more" re-ranks
    const below = grid.tiles.slice(cut).filter((tile) => !tile.dataset.label && !queue.has(tile.dataset.imageId));
    if (!below.length) return;
    labelsSinceRerank = 0;
    reranking = true;
    below.forEach((tile) => tile.remove());
    collect();
    const kept = grid.tiles.map((tile) => tile.dataset.imageId);
    htmx
      .ajax("POST", page.dataset.resultsUrl + `&offset=${grid.tiles.length}`, {
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

  function say(text, kind) {
    status.textContent = text;
    status.className = kind;
  }

  function markUnsaved(tile) {
    tile.classList.toggle("unsaved", isUnsaved(queue.get(tile.dataset.imageId)));
  }

  let lastMarked = new Set();
  function refresh() {
    const relevant = grid.tiles.reduce((n, t) => n + (t.dataset.label === "relevant"), 0);
    document.getElementById("shown-count").textContent = `${relevant} relevant of ${grid.tiles.length} shown`;
    // Only tiles whose unsaved mark may have changed are touched: pending ones and last time's.
    const now = new Set(queue.ids());
    for (const id of new Set([...now, ...lastMarked])) { const tile = grid.tileOf(id); if (tile) markUnsaved(tile); }
    lastMarked = now;
    updateLabeledDownTo();
    const line = describe(queue);
    if (line.sessionEnded) {
      const waiting = queue.size;
      status.innerHTML = `Your session ended: <a href="${page.dataset.loginUrl}">log in again</a>; ${plural(waiting, "label")} ${waiting === 1 ? "is" : "are"} waiting and will be saved after you log in.`;
      status.className = line.kind;
    } else {
      say(line.text, line.kind);
    }
  }

  function updateLabeledDownTo() {
    const tiles = grid.tiles.map((tile) => ({ rank: tile.dataset.rank, label: tile.dataset.label }));
    pane.showLabeledDownTo(tiles, page.dataset.labeledDownTo, adaptive);
  }

  // --- Submit, load more, zoom ------------------------------------------------------------------

  async function submitShown() {
    if (locked || submitButton.disabled) return;
    const limit = Number(page.dataset.submitLimit || 2000); // the server's cap on one Submit
    const all = grid.tiles.filter((t) => !t.dataset.label && !queue.has(t.dataset.imageId));
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
      queue.sessionEnded = true;
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
    map?.recolour(batch.map(({ id }) => [id, "not_relevant"]));
    if (batch.length) undo.push(batch);
    pane.showCounts(answer.counts);
    refresh();
    if (grid.current()) showDetail(grid.current());
    const rest = all.length - unlabeled.length;
    const more = rest > 0 ? `; ${rest} more shown below: press Submit again for them` : "";
    say(`Submitted: ${plural(written.size, "image")} marked not relevant (z undoes it)${more}`, "saved");
  }

  // The map's "rest of the selection: not relevant": Submit's request for images that need not be tiles; one undo.
  async function markNotRelevant(ids) {
    if (locked) return "This query is locked by staff: labels cannot change.";
    let response = null;
    try {
      response = await post(page.dataset.submitUrl, { images: ids.map(Number) });
    } catch (error) {
      response = null;
    }
    const answer = response ? await response.json().catch(() => ({})) : {};
    if (!response) return "Nothing was marked: the server did not answer. Try again.";
    if (!response.ok) return `Refused, nothing was changed: ${answer.error || response.status}`;
    const written = (answer.labeled || []).map(String);
    const batch = written.map((id) => ({ id, before: "" }));
    for (const id of written) { const tile = grid.tileOf(id); if (tile) apply(tile, "not_relevant"); }
    if (batch.length) undo.push(batch);
    map?.recolour(written.map((id) => [id, "not_relevant"]));
    pane.showCounts(answer.counts);
    refresh();
    return `${plural(written.length, "image")} of the selection marked not relevant (z undoes it).`;
  }

  // Where the selection goes once more tiles are in: the first new one, or (for `n`) the first new unlabeled one,
  // loading on while a whole page of them is labeled.
  let selectFirstNew = null;
  let seekUnlabeled = false;
  function loadMore({ unlabeled = false } = {}) {
    const button = document.querySelector('#more [data-action="load-more"]');
    if (!button) return false;
    selectFirstNew = grid.tiles.length;
    seekUnlabeled = unlabeled;
    button.click();
    return true;
  }

  function firstUnlabeled(from) {
    for (let i = from; i < grid.tiles.length; i += 1) {
      if (!grid.tiles[i].dataset.label && !queue.has(grid.tiles[i].dataset.imageId)) return i;
    }
    return -1;
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
    const next = firstUnlabeled(grid.selected + 1);
    if (next >= 0) return grid.select(next);
    if (!loadMore({ unlabeled: true })) say("No unlabeled image below this one.", "saved");
  }

  // --- keys and clicks ------------------------------------------------------------------------

  const CONTROLS = "input, select, textarea, button, a[href], summary, [contenteditable]";
  // Controls that take typed keys; a button, a link or a summary takes only the keys that press it.
  const TYPED_INTO = "input, select, textarea, [contenteditable]";
  const PRESSES = new Set(["Enter", " ", "Tab"]);
  const toggled = (tile) => (tile.dataset.label === "relevant" ? "not_relevant" : "relevant");

  // What each action of keymap.js does; `extend` is whether Shift was held (a range).
  function run(action, extend) {
    const tile = grid.current();
    const labelAll = (value) => tile && label(grid.targets(), value, "keyboard");
    const actions = {
      right: () => (grid.selected === grid.tiles.length - 1 && !extend ? loadMore() : grid.select(grid.selected + 1, { extend })),
      left: () => grid.select(grid.selected - 1, { extend }),
      down: () => grid.select(grid.selected + grid.columns(), { extend }),
      up: () => grid.select(grid.selected - grid.columns(), { extend }),
      toggle: () => tile && labelAll(toggled(tile)),
      relevant: () => labelAll("relevant"),
      not_relevant: () => labelAll("not_relevant"),
      unsure: () => labelAll("unsure"),
      undo: undoLast,
      next_unlabeled: nextUnlabeled,
      zoom: () => tile && zoom(tile),
      more_like_this: () => tile && moreLikeThis(tile),
      expand_stack: () => tile && expandStack(tile),
      confirm_prelabel: () => tile && confirmPrelabel(tile),
      load_more: loadMore,
      submit: submitShown,
      help: () => (help.hidden = false),
      deselect: () => grid.select(grid.selected),
    };
    actions[action]();
  }

  function onKey(event) {
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
      // Keys belong to the control; Esc leaves it (a text box, a button, a link) for the grid. A label key typed
      // while a button has the focus (Submit, clicked a moment ago) is the grid's: the keys never stop working.
      if (event.key === "Escape") {
        event.preventDefault(); // a search box would otherwise empty itself
        event.target.blur();
        return;
      }
      if (event.target.closest(TYPED_INTO) || PRESSES.has(event.key)) return;
    }
    const action = actionFor(event);
    if (action) {
      event.preventDefault();
      run(action, event.shiftKey);
    }
  }

  function onTileClick(tile, { shiftKey, altKey }) {
    const index = grid.indexOf.get(tile);
    if (index === undefined) return;
    if (shiftKey) return grid.select(index, { scroll: false, extend: true });
    grid.select(index, { scroll: false });
    if (altKey) return; // look at it in the side pane, without labeling it
    label([tile], toggled(tile), "click");
  }

  document.addEventListener("keydown", onKey);
  grid.element.addEventListener("click", (event) => {
    const tile = event.target.closest(".tile");
    if (tile) onTileClick(tile, event);
  });
  // A click leaves the focus on the button, where Enter and space would press it again: back to the grid.
  submitButton.addEventListener("click", () => { submitButton.blur(); submitShown(); });
  detail.addEventListener("click", (event) => {
    if (event.target.closest('[data-action="like"]') && grid.current()) moreLikeThis(grid.current());
  });
  document.getElementById("help-button").addEventListener("click", () => (help.hidden = false));
  help.addEventListener("click", () => (help.hidden = true));
  lightbox.addEventListener("click", () => (lightbox.hidden = true));

  // One search box for a text or an image: an image dropped on the search bar is uploaded as the query's example
  // (the side pane's form, with its checks and its refusals) and the grid ranks like it.
  const searchbar = document.querySelector(".searchbar");
  const upload = document.getElementById("upload-example");
  searchbar.addEventListener("dragover", (event) => {
    if (![...(event.dataTransfer?.types || [])].includes("Files")) return;
    event.preventDefault();
    searchbar.classList.add("dropping");
  });
  searchbar.addEventListener("dragleave", () => searchbar.classList.remove("dropping"));
  searchbar.addEventListener("drop", (event) => {
    searchbar.classList.remove("dropping");
    const file = event.dataTransfer?.files?.[0];
    if (!file) return;
    event.preventDefault();
    if (!upload) return say("This query is locked by staff: no example can be added.", "error");
    if (!file.type.startsWith("image/")) return say(`${file.name} is not an image: drop a JPEG, PNG, WebP or GIF.`, "error");
    const files = new DataTransfer();
    files.items.add(file);
    upload.querySelector('input[type="file"]').files = files.files;
    const ranking = upload.querySelector('input[name="ranking"]') || upload.appendChild(Object.assign(document.createElement("input"), { type: "hidden", name: "ranking" }));
    ranking.value = "image"; // the search box's image ranks by itself, not beside the text
    say(`Uploading ${file.name} to rank like it…`, "saving");
    htmx.trigger(upload, "submit");
  });

  // The scores on the tiles, on demand and remembered in this browser.
  const scores = document.getElementById("show-scores");
  const showScores = (on) => grid.element.classList.toggle("scores", on);
  scores.checked = localStorage.getItem("quire:show-scores") === "1";
  showScores(scores.checked);
  scores.addEventListener("change", () => { showScores(scores.checked); localStorage.setItem("quire:show-scores", scores.checked ? "1" : "0"); });

  // Tile size, remembered in this browser.
  const size = document.getElementById("tile-size");
  const setSize = (px) => { grid.element.style.setProperty("--tile", `${px}px`); grid.columnsCache = 0; };
  size.value = localStorage.getItem("quire:tile-size") || size.value;
  setSize(size.value);
  size.addEventListener("input", () => { setSize(size.value); localStorage.setItem("quire:tile-size", size.value); });
  window.addEventListener("resize", () => (grid.columnsCache = 0));

  wireSearchForm(document.getElementById("search"), {
    shownIds: () => grid.tiles.map((tile) => tile.dataset.imageId),
    csrfToken,
  });

  window.addEventListener("beforeunload", (event) => {
    if (queue.size) { event.preventDefault(); event.returnValue = ""; }
  });
  document.body.addEventListener("htmx:afterSwap", (event) => {
    if (event.detail.target !== grid.element) return;
    collect();
    refresh();
    const from = selectFirstNew;
    selectFirstNew = null;
    if (from === null || from >= grid.tiles.length) return;
    if (!seekUnlabeled) return grid.select(from);
    const next = firstUnlabeled(from);
    if (next >= 0) return grid.select(next);
    grid.select(grid.tiles.length - 1);
    if (!loadMore({ unlabeled: true })) say("No unlabeled image below this one.", "saved");
  });

  collect();
  for (const [id, value] of queue.restore()) {
    const tile = grid.tileOf(id);
    if (tile) tile.dataset.label = value;
  }
  if (queue.size) queue.flush();
  if (grid.tiles.length) grid.select(0, { scroll: false });
  refresh();
  playEarlyInput();

  // What was pressed and clicked before this module ran (early-input.js), in order, through the same handlers.
  function playEarlyInput() {
    const early = window.quireEarlyInput ? window.quireEarlyInput.take() : [];
    for (const input of early) {
      if (input.kind === "key") {
        // early-input.js kept only keys meant for the grid (none typed into a control)
        onKey({ ...input, target: document.body, preventDefault() {} });
      } else {
        const tile = grid.tileOf(input.imageId);
        if (tile) onTileClick(tile, input);
      }
    }
  }
}
