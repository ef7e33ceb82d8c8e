// The grid of tiles and the selection in it: one selected tile, and with Shift a range from an anchor.

export class Grid {
  // onSelect(tile, moved): after every selection; moved is false when the same tile is selected again.
  constructor(element, { onSelect = () => {} } = {}) {
    this.element = element;
    this.onSelect = onSelect;
    this.tiles = [];            // the grid's tiles, in order (collected again after each htmx swap)
    this.indexOf = new Map();   // tile -> its index
    this.selected = -1;
    this.anchor = null;         // start of a shift-range, or null
    this.drawn = [];
    this.columnsCache = 0;
  }

  collect() {
    this.tiles = Array.from(this.element.querySelectorAll(".tile"));
    this.indexOf = new Map(this.tiles.map((tile, index) => [tile, index]));
    this.columnsCache = 0;
  }

  tileOf(id) { return this.element.querySelector(`.tile[data-image-id="${CSS.escape(String(id))}"]`); }

  current() { return this.tiles[this.selected]; }

  columns() {
    // One style read, cached until the grid changes or the window resizes (no layout per key).
    if (!this.columnsCache) {
      this.columnsCache = getComputedStyle(this.element).gridTemplateColumns.split(" ").filter(Boolean).length || 1;
    }
    return this.columnsCache;
  }

  select(index, { scroll = true, extend = false } = {}) {
    if (!this.tiles.length) return;
    const next = Math.max(0, Math.min(index, this.tiles.length - 1));
    if (extend) {
      if (this.anchor === null) this.anchor = this.selected < 0 ? next : this.selected;
    } else if (this.anchor !== null) {
      this.anchor = null;
      this.clearRange();
    }
    const moved = next !== this.selected;
    if (moved) this.tiles[this.selected]?.classList.remove("selected");
    this.selected = next;
    const tile = this.tiles[next];
    tile.classList.add("selected");
    if (this.anchor !== null) this.drawRange();
    if (scroll) tile.scrollIntoView({ block: "nearest" });
    this.onSelect(tile, moved);
  }

  rangeIndices() {
    if (this.anchor === null) return [this.selected];
    const [a, b] = this.anchor < this.selected ? [this.anchor, this.selected] : [this.selected, this.anchor];
    return Array.from({ length: b - a + 1 }, (_, i) => a + i);
  }

  // The tiles a label key labels: the range, or the selected tile.
  targets() { return this.rangeIndices().map((i) => this.tiles[i]).filter(Boolean); }

  clearRange() { this.drawn.forEach((tile) => tile.classList.remove("in-range")); this.drawn = []; }

  drawRange() {
    this.clearRange();
    this.drawn = this.targets();
    this.drawn.forEach((tile) => tile.classList.add("in-range"));
  }
}
