// The labeling page's keyboard and saving. One small script, no framework.
//
// Every label change is shown at once (optimistic) and saved with one POST. A save that
// cannot reach the server is retried with back-off until it succeeds; its tile is flagged
// "unsaved" meanwhile and the page warns before it is closed. Saves are idempotent (they
// send the wanted value, not a toggle), so a retry can never flip a label twice.
(() => {
  const page = document.querySelector(".label-page");
  if (!page) return;
  const grid = document.getElementById("grid");
  const detail = document.getElementById("detail");
  const status = document.getElementById("save-status");
  const help = document.getElementById("help");
  const csrf = document.cookie.split("; ").find((c) => c.startsWith("csrftoken="))?.split("=")[1] || "";
  const NAMES = { relevant: "Relevant", not_relevant: "Not relevant", unsure: "Unsure", "": "Not relevant (not saved yet)" };
  const tiles = () => Array.from(grid.querySelectorAll(".tile"));
  let selected = 0;
  let lookingSince = performance.now(); // when the selected image was shown: its lead time starts here
  const undo = [];            // [{id, before}] newest last
  const wanted = new Map();   // image id -> label the server must end up with
  const inFlight = new Set();
  const failures = new Map(); // image id -> failed attempts so far

  function tileOf(id) { return grid.querySelector(`.tile[data-image-id="${id}"]`); }

  function select(index, scroll = true) {
    const all = tiles();
    if (!all.length) return;
    const next = Math.max(0, Math.min(index, all.length - 1));
    if (next !== selected) lookingSince = performance.now();
    selected = next;
    all.forEach((t, i) => t.classList.toggle("selected", i === selected));
    const tile = all[selected];
    if (scroll) tile.scrollIntoView({ block: "nearest" });
    showDetail(tile);
  }

  function showDetail(tile) {
    const d = tile.dataset;
    const row = (name, value) => (value ? `<dt>${name}</dt><dd>${escape(value)}</dd>` : "");
    detail.innerHTML = `<img src="${d.full}" alt="image ${d.imageId}">
      <p class="label-name label-${d.label || "none"}">${NAMES[d.label]}</p>
      <dl>${row("Species", d.common)}${row("Scientific name", d.scientific)}${row("Observed", d.date)}
      ${row("Place", d.place)}${row("License", d.license)}${row("Rights holder", d.rights)}
      ${row("Rank", d.rank)}${row("Score", d.score)}${row("Image id", d.imageId)}</dl>`;
  }

  function escape(text) {
    return String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
  }

  function columns() {
    const all = tiles();
    if (all.length < 2) return 1;
    const top = all[0].offsetTop;
    const index = all.findIndex((t) => t.offsetTop !== top);
    return index === -1 ? all.length : index;
  }

  function setLabel(tile, value, source, record = true) {
    const id = tile.dataset.imageId;
    if (record) undo.push({ id, before: tile.dataset.label });
    tile.dataset.label = value;
    // How long the annotator looked before deciding (an undo is no decision): kept with the event.
    const leadTime = record ? Math.round(performance.now() - lookingSince) : null;
    lookingSince = performance.now();
    wanted.set(id, { value, source, leadTime });
    save(id);
    refresh();
    if (tiles()[selected] === tile) showDetail(tile);
  }

  function toggle(tile, source) {
    setLabel(tile, tile.dataset.label === "relevant" ? "not_relevant" : "relevant", source);
  }

  async function save(id) {
    if (inFlight.has(id) || !wanted.has(id)) return;
    const { value, source, leadTime } = wanted.get(id);
    inFlight.add(id);
    refresh();
    let retry = false;
    try {
      const response = await fetch(page.dataset.saveUrl, {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
        body: JSON.stringify({ image: Number(id), value, source, lead_time_ms: leadTime }),
      });
      if (response.ok) {
        if (wanted.get(id)?.value === value) wanted.delete(id);
        failures.delete(id);
        showCounts((await response.json()).counts);
      } else if (response.status >= 500 || response.status === 429) {
        retry = true;
      } else {
        wanted.delete(id); // the server refused it for good: say so, do not retry
        status.textContent = `Not saved: ${(await response.json().catch(() => ({}))).error || response.statusText}`;
        status.className = "error";
      }
    } catch (error) {
      retry = true; // the server could not be reached
    }
    inFlight.delete(id);
    if (retry) {
      const attempts = (failures.get(id) || 0) + 1;
      failures.set(id, attempts);
      setTimeout(() => save(id), Math.min(10000, 500 * 2 ** attempts));
    } else if (wanted.has(id)) {
      save(id); // changed again while the request was out
    }
    refresh();
  }

  function showCounts(counts) {
    if (!counts) return;
    document.getElementById("query-counts").textContent =
      `${counts.labeled} labeled, ${counts.relevant} relevant, ${counts.unsure} unsure`;
  }

  function refresh() {
    const all = tiles();
    const relevant = all.filter((t) => t.dataset.label === "relevant").length;
    document.getElementById("selected-count").textContent = `Selected ${relevant} of ${all.length}`;
    all.forEach((t) => t.classList.toggle("unsaved", failures.has(t.dataset.imageId)));
    const pending = wanted.size;
    if (failures.size) {
      status.textContent = `${failures.size} unsaved, retrying…`;
      status.className = "error";
    } else if (!status.classList.contains("error") || pending === 0) {
      status.textContent = pending ? "Saving…" : "All changes saved";
      status.className = pending ? "saving" : "saved";
    }
  }

  async function submitShown() {
    const unlabeled = tiles().filter((t) => !t.dataset.label && !wanted.has(t.dataset.imageId));
    const response = await fetch(page.dataset.submitUrl, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
      body: JSON.stringify({ images: unlabeled.map((t) => Number(t.dataset.imageId)) }),
    });
    if (!response.ok) {
      status.textContent = "Submit failed: nothing was changed. Try again.";
      status.className = "error";
      return;
    }
    unlabeled.forEach((t) => (t.dataset.label = "not_relevant"));
    showCounts((await response.json()).counts);
    status.textContent = `Submitted: ${unlabeled.length} images marked not relevant`;
    status.className = "saved";
    document.getElementById("selected-count").textContent =
      `Selected ${tiles().filter((t) => t.dataset.label === "relevant").length} of ${tiles().length}`;
  }

  document.addEventListener("keydown", (event) => {
    if (event.target.closest("input, select, textarea") || event.ctrlKey || event.metaKey || event.altKey) return;
    if (!help.hidden) {
      if (event.key === "Escape" || event.key === "?") help.hidden = true;
      event.preventDefault();
      return;
    }
    const all = tiles();
    const tile = all[selected];
    const actions = {
      ArrowRight: () => select(selected + 1),
      ArrowLeft: () => select(selected - 1),
      ArrowDown: () => select(selected + columns()),
      ArrowUp: () => select(selected - columns()),
      Enter: () => tile && toggle(tile, "keyboard"),
      " ": () => tile && toggle(tile, "keyboard"),
      1: () => tile && setLabel(tile, "relevant", "keyboard"),
      0: () => tile && setLabel(tile, "not_relevant", "keyboard"),
      u: () => tile && setLabel(tile, "unsure", "keyboard"),
      z: () => {
        const last = undo.pop();
        const target = last && tileOf(last.id);
        if (target) {
          setLabel(target, last.before, "keyboard", false);
          select(tiles().indexOf(target));
        }
      },
      "?": () => (help.hidden = false),
    };
    if (actions[event.key]) {
      event.preventDefault();
      actions[event.key]();
    }
  });

  grid.addEventListener("click", (event) => {
    const tile = event.target.closest(".tile");
    if (!tile) return;
    select(tiles().indexOf(tile), false);
    toggle(tile, "click");
  });
  document.getElementById("submit").addEventListener("click", submitShown);
  document.getElementById("help-button").addEventListener("click", () => (help.hidden = false));
  help.addEventListener("click", () => (help.hidden = true));

  // Taxon filters: a suggestion becomes a chip and the search runs again; × removes one.
  const form = document.getElementById("search");
  const taxonBox = form.querySelector('input[type="text"][name="taxon"]');
  document.getElementById("suggestions").addEventListener("click", (event) => {
    const choice = event.target.closest(".suggestion");
    if (!choice) return;
    const chip = document.createElement("input");
    Object.assign(chip, { type: "hidden", name: "taxon", value: choice.dataset.value });
    form.querySelector(".chips").append(chip);
    taxonBox.value = "";
    form.submit();
  });
  form.querySelector(".chips").addEventListener("click", (event) => {
    if (!event.target.classList.contains("remove")) return;
    event.target.closest(".chip").remove();
    form.submit();
  });
  form.addEventListener("submit", () => { if (!taxonBox.value.trim()) taxonBox.disabled = true; });

  window.addEventListener("beforeunload", (event) => {
    if (wanted.size) { event.preventDefault(); event.returnValue = ""; }
  });
  document.body.addEventListener("htmx:afterSwap", refresh);
  select(0, false);
  refresh();
})();
