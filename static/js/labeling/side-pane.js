// The labeling page's side pane: the selected image with its facts, the query's counts, how far down the ranking
// every image is labeled, and the figures (not-relevant run, completeness claim, advice) asked for again once
// saving has paused. The HTML and the figures it shows are plain functions of their inputs (tests/js/side-pane.test.mjs);
// SidePane only puts them into the page.

import { NAMES, escape, stackNote, why } from "./text.js";

// The selected image: `facts` is a tile's dataset, `state` its save-queue entry (undefined when stored).
export function detailHtml(facts, state, stackCount) {
  const row = (name, value) => (value ? `<dt>${name}</dt><dd>${escape(value)}</dd>` : "");
  const note = state ? ` <span class="muted">(${state.state === "refused" ? "not saved" : "saving"})</span>` : "";
  const label = facts.label || "";
  return `<img src="${escape(facts.full || "")}" alt="image ${escape(facts.imageId)}">
      <p class="label-name label-${escape(label || "none")}">${NAMES[label] ?? ""}${note}</p>
      <dl>${row("Species", facts.common)}${row("Scientific name", facts.scientific)}${row("Observed", facts.date)}
      ${row("Place", facts.place)}${row("License", facts.license)}${row("Rights holder", facts.rights)}
      ${row("Rank", facts.rank)}${row("Score", facts.score)}${row("Image id", facts.imageId)}</dl>${why(facts.why)}${stackNote(stackCount)}
      <p class="muted">f: the whole image · <button type="button" class="link" data-action="like" title="l">More like this</button></p>`;
}

// The query's counts as a save's answer gives them; null when the answer carried none.
export function countsText(counts) {
  if (!counts) return null;
  return `${counts.labeled} labeled, ${counts.relevant} relevant, ${counts.unsure} unsure`;
}

// "Labeled down to rank N" of the text ranking from the tiles shown ({rank, label} from rank 1), the server's figure
// counting where every tile is labeled (it knows the ranks below them); null where the tiles cannot say (a ranking
// that learns has no fixed ranks, or the tiles do not start at rank 1).
export function labeledDownTo(tiles, serverDepth, adaptive) {
  if (adaptive || !tiles.length || String(tiles[0].rank) !== "1") return null;
  const firstUnlabeled = tiles.find((tile) => !tile.label);
  if (firstUnlabeled) return Number(firstUnlabeled.rank) - 1;
  return Math.max(Number(tiles[tiles.length - 1].rank), Number(serverDepth || 0));
}

export class SidePane {
  // detail, counts, labeledBox: elements (counts and labeledBox may be missing); figures(): the figures element
  // now (htmx swaps it); reload(element): asks the server for it again; delayMs: the pause after the last save.
  constructor({ detail, counts, labeledBox, figures, reload, delayMs, timers = globalThis }) {
    Object.assign(this, { detail, counts, labeledBox, figures, reload, delayMs, timers });
    this.timer = null;
  }

  show(facts, state, stackCount) {
    this.detail.innerHTML = detailHtml(facts, state, stackCount);
  }

  showCounts(counts) {
    const text = countsText(counts);
    if (text !== null && this.counts) this.counts.textContent = text;
  }

  showLabeledDownTo(tiles, serverDepth, adaptive) {
    const depth = labeledDownTo(tiles, serverDepth, adaptive);
    if (depth !== null && this.labeledBox) this.labeledBox.textContent = String(depth);
  }

  // Asked for again once saving has paused for delayMs (not on every key): each call restarts the wait.
  figuresLater() {
    this.timers.clearTimeout(this.timer);
    this.timer = this.timers.setTimeout(() => {
      const element = this.figures();
      if (element) this.reload(element);
    }, this.delayMs);
  }
}
