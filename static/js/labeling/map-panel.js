// The labeling page's map panel: loads the map (GET .../map/binary/) when opened, shows a thumbnail on hover,
// selects a point's tile in the grid on click (and rings the grid's selected tile on the map), turns a lasso or
// a box into the address's within= (the server then ranks only the images inside), and recolours points as
// the server stores labels.

import { PointMap, readMap } from "./map-view.js";
import { fromText, toText } from "./polygon.js";

export function wireMap(panel, { grid, thumbUrl, onPick, onRestNotRelevant }) {
  if (!panel) return null;
  const status = panel.querySelector("#map-status");
  const hover = panel.querySelector(".map-hover");
  const say = (text, kind = "") => { status.textContent = text; status.className = kind; };
  let map = null;
  let loading = null;
  const selection = fromText(panel.dataset.within);

  function load() {
    if (loading) return loading;
    say("Loading the map…");
    loading = fetch(panel.dataset.binaryUrl, { credentials: "same-origin" }).then(async (response) => {
      if (!response.ok) return say(await response.text(), "error");
      try {
        map = new PointMap(panel.querySelector(".map-gl"), panel.querySelector(".map-overlay"), {
          onHover: showThumb,
          onPick: pick,
          onSelection: select,
        });
      } catch (error) {
        return say(error.message, "error");
      }
      const data = readMap(await response.arrayBuffer());
      map.setData(data);
      if (selection) map.setSelection(selection);
      window.quireMap = map; // for the browser tests and the frame-rate bench
      const current = grid.current();
      if (current) map.mark(current.dataset.imageId);
      say(selection
        ? `${map.selectedCount().toLocaleString()} of ${data.count.toLocaleString()} images selected: the grid shows them, in the ranking's order.`
        : `${data.count.toLocaleString()} images. Drag to pan, wheel to zoom; Lasso or Box selects.`);
      panel.dataset.ready = "1";
    }).catch(() => say("The map could not be loaded: the server did not answer.", "error"));
    return loading;
  }

  function showThumb(hit, px, py) {
    if (!hit) { hover.hidden = true; return; }
    hover.src = thumbUrl(hit.imageId);
    hover.alt = `image ${hit.imageId}`;
    hover.style.left = `${px + 14}px`;
    hover.style.top = `${py + 14}px`;
    hover.hidden = false;
  }

  function pick(hit) {
    if (!onPick(hit.imageId)) {
      say(`Image ${hit.imageId} is not in the grid below: lasso around it to rank its neighbourhood.`, "");
    }
    map.mark(hit.imageId);
  }

  function select(polygon, problem) {
    if (!polygon) return say(problem, "error");
    if (panel.dataset.selection === "here") { // no grid to filter: the selection is counted on the map itself
      map.setSelection(polygon);
      const held = [0, 0, 0];
      map.selected.forEach((on, row) => { if (on) held[Math.min(2, map.codes[row])] += 1; });
      return say(`${(held[0] + held[1] + held[2]).toLocaleString()} images selected: ${held[1].toLocaleString()} relevant to a query, ${held[2].toLocaleString()} labeled and not relevant, ${held[0].toLocaleString()} with no label.`);
    }
    const params = new URLSearchParams(window.location.search);
    params.set("within", toText(polygon));
    params.delete("offset");
    window.location.search = params.toString();
  }

  panel.addEventListener("toggle", () => { if (panel.open) load(); });
  // The map's buttons give the focus back at once: the grid's keys (labels, z to undo) keep working after a click.
  panel.addEventListener("click", (event) => event.target.closest("button")?.blur());
  if (panel.open) load();
  for (const button of panel.querySelectorAll("[data-mode]")) {
    button.addEventListener("click", () => {
      if (!map) return;
      map.mode = button.dataset.mode;
      for (const other of panel.querySelectorAll("[data-mode]")) other.classList.toggle("on", other === button);
      panel.querySelector(".map-stage").dataset.mode = map.mode;
    });
  }
  panel.querySelector('[data-action="fit"]')?.addEventListener("click", () => map?.fit());
  panel.querySelector('[data-action="colour"]')?.addEventListener("change", async (event) => {
    if (!map) return;
    if (event.target.value !== "score") {
      map.setScores(null);
      return say("Coloured by label.");
    }
    say("Scoring the collection with this ranking…");
    const url = `${panel.dataset.scoresUrl}?strategy=${encodeURIComponent(panel.dataset.strategy)}`;
    const response = await fetch(url, { credentials: "same-origin" }).catch(() => null);
    if (!response || !response.ok) {
      event.target.value = "labels";
      return say(`The scores could not be shown: ${response ? await response.text() : "the server did not answer"}`, "error");
    }
    map.setScores(new Float32Array(await response.arrayBuffer()));
    say("Unlabeled points by this ranking's score: dark blue where it looks next, pale where it looks last.");
  });
  panel.querySelector('[data-action="clear"]')?.addEventListener("click", () => {
    const params = new URLSearchParams(window.location.search);
    params.delete("within");
    params.delete("offset");
    window.location.search = params.toString();
  });
  panel.querySelector('[data-action="rest-not-relevant"]')?.addEventListener("click", async () => {
    say("Finding the selection's unlabeled images…");
    const url = `${panel.dataset.candidatesUrl}?k=1000&within=${encodeURIComponent(panel.dataset.within)}`;
    const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } }).catch(() => null);
    const answer = response ? await response.json().catch(() => ({})) : {};
    if (!response || !response.ok) return say(`Nothing was changed: ${answer.detail || answer.within || "the server did not answer"}`, "error");
    const ids = (answer.results || []).map((r) => r.image_id);
    if (!ids.length) return say("Every image of the selection has a label already.", "");
    say(await onRestNotRelevant(ids));
  });

  return {
    recolour: (pairs) => map?.recolour(pairs),
    mark: (imageId) => map?.mark(imageId),
  };
}
