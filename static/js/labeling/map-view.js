// The map of the collection: every image a point (WebGL2), coloured by its label for this query, with pan, zoom,
// hover, click and a lasso or a box that filters the grid (the selection lives in the address: within=...).
//
// Written here rather than taken from npm: regl-scatterplot 1.16 (the fitting library) drew 100,000 points at
// 66 ms a frame in this machine's headless Chromium (software WebGL) and had not drawn 1,000,000 after nine
// minutes (bench/RESULTS.md). This view draws the points once into a texture and, while the user pans or zooms,
// moves only that texture (two triangles a frame, whatever the count); 150 ms after the last move it draws the
// points again, sharp, at the new view. Labeled points are drawn last, on top.

import { crossesItself, inside, simplify } from "./polygon.js";

export const PALETTE = {
  0: [0.55, 0.58, 0.62, 0.55], // unlabeled
  1: [0.1, 0.62, 0.28, 1], // relevant
  2: [0.84, 0.19, 0.15, 1], // not relevant
  3: [0.99, 0.62, 0.2, 1], // unsure
  4: [0.46, 0.25, 0.65, 1], // undecided
};
export const CODES = { relevant: 1, not_relevant: 2, unsure: 3, undecided: 4, "": 0 };
const SETTLE_MS = 150;
const MARGIN = 2; // the texture covers this many views across: a pan shows cached points, not emptiness

// The binary form of GET /api/queries/{id}/map/binary/ (annotator/map/points.py) as typed arrays.
export function readMap(buffer) {
  const view = new DataView(buffer);
  const count = view.getUint32(8, true);
  const versionLength = view.getUint32(12, true);
  let at = 16 + versionLength;
  at += (8 - (at % 8)) % 8;
  const ids = new BigInt64Array(buffer, at, count);
  const xs = new Float32Array(buffer, at + 8 * count, count);
  const ys = new Float32Array(buffer, at + 12 * count, count);
  const codes = new Uint8Array(buffer.slice(at + 16 * count, at + 17 * count));
  return { count, ids: Float64Array.from(ids, Number), xs, ys, codes };
}

const POINTS_VS = `#version 300 es
in vec2 a_xy; in float a_code; in float a_sel; in float a_score;
uniform vec2 u_centre; uniform vec2 u_scale; uniform float u_size; uniform float u_hasSel; uniform vec4 u_palette[5];
uniform float u_byScore;
out vec4 v_colour;
void main() {
  gl_Position = vec4((a_xy - u_centre) * u_scale, 0.0, 1.0);
  int code = int(a_code + 0.5);
  gl_PointSize = code > 0 ? u_size + 2.0 : u_size;
  vec4 c = u_palette[code];
  // By score: an unlabeled point from pale (the ranking's last) to dark blue (its next), by rank.
  if (code == 0 && u_byScore > 0.5) c = mix(vec4(0.86, 0.88, 0.91, 0.45), vec4(0.05, 0.22, 0.62, 0.95), a_score);
  if (u_hasSel > 0.5 && a_sel < 0.5) c.a *= 0.18;  // unselected points stay as faint context
  v_colour = c;
}`;
const POINTS_FS = `#version 300 es
precision mediump float; in vec4 v_colour; out vec4 colour;
void main() { colour = vec4(v_colour.rgb * v_colour.a, v_colour.a); }`;
const QUAD_VS = `#version 300 es
in vec2 a_pos; uniform vec4 u_rect; out vec2 v_uv;
void main() { v_uv = a_pos; gl_Position = vec4(mix(u_rect.xy, u_rect.zw, a_pos), 0.0, 1.0); }`;
const QUAD_FS = `#version 300 es
precision mediump float; in vec2 v_uv; uniform sampler2D u_tex; out vec4 colour;
void main() { colour = texture(u_tex, v_uv); }`;

function program(gl, vs, fs) {
  const make = (type, source) => {
    const shader = gl.createShader(type);
    gl.shaderSource(shader, source);
    gl.compileShader(shader);
    if (!gl.getShaderParameter(shader, gl.COMPILE_STATUS)) throw new Error(gl.getShaderInfoLog(shader));
    return shader;
  };
  const p = gl.createProgram();
  gl.attachShader(p, make(gl.VERTEX_SHADER, vs));
  gl.attachShader(p, make(gl.FRAGMENT_SHADER, fs));
  gl.linkProgram(p);
  if (!gl.getProgramParameter(p, gl.LINK_STATUS)) throw new Error(gl.getProgramInfoLog(p));
  return p;
}

export class PointMap {
  constructor(canvas, overlay, { onHover = () => {}, onPick = () => {}, onSelection = () => {} } = {}) {
    Object.assign(this, { canvas, overlay, onHover, onPick, onSelection });
    const gl = canvas.getContext("webgl2", { antialias: false, premultipliedAlpha: true, preserveDrawingBuffer: true });
    if (!gl) throw new Error("This browser has no WebGL2: the map cannot be drawn.");
    this.gl = gl;
    this.points = program(gl, POINTS_VS, POINTS_FS);
    this.quad = program(gl, QUAD_VS, QUAD_FS);
    this.quadBuffer = gl.createBuffer();
    gl.bindBuffer(gl.ARRAY_BUFFER, this.quadBuffer);
    gl.bufferData(gl.ARRAY_BUFFER, new Float32Array([0, 0, 1, 0, 0, 1, 1, 1]), gl.STATIC_DRAW);
    this.ctx = overlay.getContext("2d");
    this.mode = "pan"; // or "lasso", "box"
    this.polygon = null; // the selection, in map coordinates: [[x, y], ...]
    this.marked = null; // the image id ringed on the map (the grid's selected tile)
    this.#wire();
  }

  setData({ ids, xs, ys, codes }) {
    const gl = this.gl;
    Object.assign(this, { ids, xs, ys, codes, count: ids.length });
    this.rowOf = new Map();
    for (let i = 0; i < ids.length; i += 1) this.rowOf.set(ids[i], i);
    const xy = new Float32Array(2 * ids.length);
    for (let i = 0; i < ids.length; i += 1) { xy[2 * i] = xs[i]; xy[2 * i + 1] = ys[i]; }
    this.xyBuffer = this.#buffer(xy);
    this.codeBuffer = this.#buffer(new Float32Array(codes));
    this.selected = new Float32Array(ids.length);
    this.selBuffer = this.#buffer(this.selected);
    this.scoreBuffer = this.#buffer(new Float32Array(ids.length));
    this.byScore = false;
    this.#rebuildLabeled();
    this.#buildGrid();
    this.fit();
  }

  // Everything in view, with a little room.
  fit() {
    let [minX, maxX, minY, maxY] = [Infinity, -Infinity, Infinity, -Infinity];
    for (let i = 0; i < this.count; i += 1) {
      minX = Math.min(minX, this.xs[i]); maxX = Math.max(maxX, this.xs[i]);
      minY = Math.min(minY, this.ys[i]); maxY = Math.max(maxY, this.ys[i]);
    }
    if (!this.count) [minX, maxX, minY, maxY] = [-1, 1, -1, 1];
    const { width, height } = this.#size();
    this.view = {
      cx: (minX + maxX) / 2,
      cy: (minY + maxY) / 2,
      unit: (1.08 * Math.max((maxX - minX) / width, (maxY - minY) / height)) || 1, // map units a CSS pixel
    };
    this.#settle(true);
  }

  // Labels the server has stored: the points change colour.
  recolour(pairs) {
    let changed = false;
    for (const [id, value] of pairs) {
      const row = this.rowOf?.get(Number(id));
      if (row === undefined) continue;
      this.codes[row] = CODES[value] ?? 0;
      changed = true;
    }
    if (!changed) return;
    this.gl.bindBuffer(this.gl.ARRAY_BUFFER, this.codeBuffer);
    this.gl.bufferData(this.gl.ARRAY_BUFFER, new Float32Array(this.codes), this.gl.STATIC_DRAW);
    this.#rebuildLabeled();
    this.#settle(true);
  }

  setSelection(polygon) {
    this.polygon = polygon;
    for (let i = 0; i < this.count; i += 1) this.selected[i] = polygon && inside(polygon, this.xs[i], this.ys[i]) ? 1 : 0;
    this.gl.bindBuffer(this.gl.ARRAY_BUFFER, this.selBuffer);
    this.gl.bufferData(this.gl.ARRAY_BUFFER, this.selected, this.gl.STATIC_DRAW);
    this.#rebuildLabeled(); // the labeled points drawn on top carry the selection too
    this.#settle(true);
  }

  // The ranking's scores of every point (map order; NaN for none), shown as each unlabeled point's rank among
  // them; null goes back to colouring by labels alone.
  setScores(column) {
    this.byScore = Boolean(column);
    if (column) {
      const rows = Array.from({ length: this.count }, (_, i) => i).filter((i) => Number.isFinite(column[i]));
      rows.sort((a, b) => column[a] - column[b]);
      const rank = new Float32Array(this.count);
      rows.forEach((row, k) => { rank[row] = rows.length > 1 ? k / (rows.length - 1) : 1; });
      this.gl.bindBuffer(this.gl.ARRAY_BUFFER, this.scoreBuffer);
      this.gl.bufferData(this.gl.ARRAY_BUFFER, rank, this.gl.STATIC_DRAW);
    }
    this.#settle(true);
  }

  selectedCount() { return this.selected ? this.selected.reduce((n, v) => n + v, 0) : 0; }

  mark(imageId) { this.marked = imageId; this.#drawOverlay(); }

  // Milliseconds to draw every point again at the current view, waited for (a pixel read back): the bench's
  // measure of what the user waits for once they stop moving.
  timeRedraw() {
    const started = performance.now();
    this.#renderPoints();
    this.gl.readPixels(0, 0, 1, 1, this.gl.RGBA, this.gl.UNSIGNED_BYTE, new Uint8Array(4));
    const spent = performance.now() - started;
    this.#frame();
    return spent;
  }

  // Pan by (dx, dy) CSS pixels and zoom by `factor` around (px, py); what the bench drives.
  move(dx, dy, factor = 1, px = null, py = null) {
    const v = this.view;
    const { width, height } = this.#size();
    v.cx -= dx * v.unit;
    v.cy += dy * v.unit;
    if (factor !== 1) {
      const ax = v.cx + ((px ?? width / 2) - width / 2) * v.unit;
      const ay = v.cy - ((py ?? height / 2) - height / 2) * v.unit;
      v.unit /= factor;
      v.cx = ax - ((px ?? width / 2) - width / 2) * v.unit;
      v.cy = ay + ((py ?? height / 2) - height / 2) * v.unit;
    }
    this.#settle(false);
  }

  // Screen (CSS pixels in the canvas) <-> map coordinates.
  toMap(px, py) {
    const { width, height } = this.#size();
    return [this.view.cx + (px - width / 2) * this.view.unit, this.view.cy - (py - height / 2) * this.view.unit];
  }
  toScreen(x, y) {
    const { width, height } = this.#size();
    return [(x - this.view.cx) / this.view.unit + width / 2, height / 2 - (y - this.view.cy) / this.view.unit];
  }

  // The image nearest (x, y) CSS pixels, within `radius` pixels; null for none.
  nearest(px, py, radius = 6) {
    if (!this.count) return null;
    const [x, y] = this.toMap(px, py);
    const reach = radius * this.view.unit;
    const g = this.grid;
    const cx0 = Math.floor((x - reach - g.minX) / g.cell), cx1 = Math.floor((x + reach - g.minX) / g.cell);
    const cy0 = Math.floor((y - reach - g.minY) / g.cell), cy1 = Math.floor((y + reach - g.minY) / g.cell);
    let best = null, bestD = reach * reach;
    for (let cy = Math.max(0, cy0); cy <= Math.min(g.side - 1, cy1); cy += 1) {
      for (let cx = Math.max(0, cx0); cx <= Math.min(g.side - 1, cx1); cx += 1) {
        const cell = cy * g.side + cx;
        for (let k = g.start[cell]; k < g.start[cell + 1]; k += 1) {
          const i = g.order[k];
          const d = (this.xs[i] - x) ** 2 + (this.ys[i] - y) ** 2;
          if (d <= bestD) { bestD = d; best = i; }
        }
      }
    }
    return best === null ? null : { row: best, imageId: this.ids[best], code: this.codes[best] };
  }

  // --- drawing ---------------------------------------------------------------------------------

  #size() {
    const rect = this.canvas.getBoundingClientRect();
    return { width: rect.width || 1, height: rect.height || 1 };
  }

  #buffer(data) {
    const gl = this.gl;
    const buffer = gl.createBuffer();
    gl.bindBuffer(gl.ARRAY_BUFFER, buffer);
    gl.bufferData(gl.ARRAY_BUFFER, data, gl.STATIC_DRAW);
    return buffer;
  }

  // The labeled points, drawn again on top: rebuilt when a label or the selection changes, not on every redraw.
  #rebuildLabeled() {
    if (this.labeled) for (const name of ["xy", "code", "sel", "score"]) this.gl.deleteBuffer(this.labeled[name]);
    const rows = [];
    for (let i = 0; i < this.count; i += 1) if (this.codes[i]) rows.push(i);
    const xy = new Float32Array(2 * rows.length), code = new Float32Array(rows.length), sel = new Float32Array(rows.length);
    rows.forEach((row, k) => { xy[2 * k] = this.xs[row]; xy[2 * k + 1] = this.ys[row]; code[k] = this.codes[row]; sel[k] = this.selected[row]; });
    const score = this.#buffer(new Float32Array(rows.length)); // labeled points keep their label's colour
    this.labeled = { count: rows.length, xy: this.#buffer(xy), code: this.#buffer(code), sel: this.#buffer(sel), score };
  }

  // A bucket grid over the points (counting sort by cell): hover and click find the nearest point in microseconds.
  #buildGrid() {
    let [minX, maxX, minY, maxY] = [Infinity, -Infinity, Infinity, -Infinity];
    for (let i = 0; i < this.count; i += 1) {
      minX = Math.min(minX, this.xs[i]); maxX = Math.max(maxX, this.xs[i]);
      minY = Math.min(minY, this.ys[i]); maxY = Math.max(maxY, this.ys[i]);
    }
    const side = Math.max(1, Math.ceil(Math.sqrt(this.count / 4)));
    const cell = Math.max(maxX - minX, maxY - minY, 1e-9) / side + 1e-9;
    const cellOf = new Uint32Array(this.count);
    const start = new Uint32Array(side * side + 1);
    for (let i = 0; i < this.count; i += 1) {
      const c = Math.min(side - 1, Math.floor((this.ys[i] - minY) / cell)) * side + Math.min(side - 1, Math.floor((this.xs[i] - minX) / cell));
      cellOf[i] = c;
      start[c + 1] += 1;
    }
    for (let c = 0; c < side * side; c += 1) start[c + 1] += start[c];
    const fill = start.slice(0, side * side);
    const order = new Uint32Array(this.count);
    for (let i = 0; i < this.count; i += 1) order[fill[cellOf[i]]++] = i;
    this.grid = { minX, minY, cell, side, start, order };
  }

  // full: draw the points again now (their colours or the selection changed); else move the cached texture
  // now and draw the points again once the view has stayed still for SETTLE_MS.
  #settle(full) {
    clearTimeout(this.settleTimer);
    if (full) this.#renderPoints();
    else this.settleTimer = setTimeout(() => { this.#renderPoints(); this.#frame(); }, SETTLE_MS);
    if (!this.framePending) {
      this.framePending = true;
      requestAnimationFrame(() => { this.framePending = false; this.#frame(); });
    }
  }

  #resize() {
    const { width, height } = this.#size();
    const ratio = window.devicePixelRatio || 1;
    for (const c of [this.canvas, this.overlay]) {
      const w = Math.round(width * ratio), h = Math.round(height * ratio);
      if (c.width !== w || c.height !== h) { c.width = w; c.height = h; }
    }
    return { width, height, ratio };
  }

  // The points, at the current view, into a texture MARGIN views wide and high.
  #renderPoints() {
    if (!this.count && this.count !== 0) return;
    const gl = this.gl;
    const { width, height, ratio } = this.#resize();
    const tw = Math.min(gl.getParameter(gl.MAX_TEXTURE_SIZE), Math.round(width * ratio * MARGIN));
    const th = Math.min(gl.getParameter(gl.MAX_TEXTURE_SIZE), Math.round(height * ratio * MARGIN));
    if (!this.texture || this.texture.w !== tw || this.texture.h !== th) {
      const tex = gl.createTexture();
      gl.bindTexture(gl.TEXTURE_2D, tex);
      gl.texImage2D(gl.TEXTURE_2D, 0, gl.RGBA, tw, th, 0, gl.RGBA, gl.UNSIGNED_BYTE, null);
      gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MIN_FILTER, gl.LINEAR);
      gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MAG_FILTER, gl.LINEAR);
      gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_WRAP_S, gl.CLAMP_TO_EDGE);
      gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_WRAP_T, gl.CLAMP_TO_EDGE);
      const fbo = gl.createFramebuffer();
      gl.bindFramebuffer(gl.FRAMEBUFFER, fbo);
      gl.framebufferTexture2D(gl.FRAMEBUFFER, gl.COLOR_ATTACHMENT0, gl.TEXTURE_2D, tex, 0);
      this.texture = { tex, fbo, w: tw, h: th };
    }
    gl.bindFramebuffer(gl.FRAMEBUFFER, this.texture.fbo);
    gl.viewport(0, 0, tw, th);
    gl.clearColor(0, 0, 0, 0);
    gl.clear(gl.COLOR_BUFFER_BIT);
    gl.enable(gl.BLEND);
    gl.blendFunc(gl.ONE, gl.ONE_MINUS_SRC_ALPHA);
    gl.useProgram(this.points);
    const u = (name) => gl.getUniformLocation(this.points, name);
    const unitsWide = (tw / ratio) * this.view.unit, unitsHigh = (th / ratio) * this.view.unit;
    gl.uniform2f(u("u_centre"), this.view.cx, this.view.cy);
    gl.uniform2f(u("u_scale"), 2 / unitsWide, 2 / unitsHigh);
    // Few points may be large; a million must be small or they hide each other.
    const size = this.count < 2000 ? 7 : this.count < 50000 ? 4 : this.count < 300000 ? 2.5 : 1.5;
    gl.uniform1f(u("u_size"), size * ratio);
    gl.uniform1f(u("u_hasSel"), this.polygon ? 1 : 0);
    gl.uniform1f(u("u_byScore"), this.byScore ? 1 : 0);
    gl.uniform4fv(u("u_palette"), new Float32Array([0, 1, 2, 3, 4].flatMap((k) => PALETTE[k])));
    const draw = (xy, code, sel, score, count) => {
      const attribute = (name, buffer, size) => {
        const at = gl.getAttribLocation(this.points, name);
        gl.bindBuffer(gl.ARRAY_BUFFER, buffer);
        gl.enableVertexAttribArray(at);
        gl.vertexAttribPointer(at, size, gl.FLOAT, false, 0, 0);
      };
      attribute("a_xy", xy, 2);
      attribute("a_code", code, 1);
      attribute("a_sel", sel, 1);
      attribute("a_score", score, 1);
      gl.drawArrays(gl.POINTS, 0, count);
    };
    draw(this.xyBuffer, this.codeBuffer, this.selBuffer, this.scoreBuffer, this.count);
    if (this.labeled.count) {
      draw(this.labeled.xy, this.labeled.code, this.labeled.sel, this.labeled.score, this.labeled.count);
    }
    // No gl.finish(): the browser's GPU process draws while this page goes on taking keys.
    this.rendered = { ...this.view, unitsWide, unitsHigh };
  }

  // One frame: the cached texture placed where its view now falls, and the overlay.
  #frame() {
    if (!this.rendered) return;
    const gl = this.gl;
    const { width, height, ratio } = this.#resize();
    gl.bindFramebuffer(gl.FRAMEBUFFER, null);
    gl.viewport(0, 0, Math.round(width * ratio), Math.round(height * ratio));
    gl.clearColor(1, 1, 1, 1);
    gl.clear(gl.COLOR_BUFFER_BIT);
    gl.useProgram(this.quad);
    const r = this.rendered, v = this.view;
    const halfW = (width * v.unit) / 2, halfH = (height * v.unit) / 2;
    const clipX = (x) => (x - v.cx) / halfW, clipY = (y) => (y - v.cy) / halfH;
    gl.uniform4f(
      gl.getUniformLocation(this.quad, "u_rect"),
      clipX(r.cx - r.unitsWide / 2), clipY(r.cy - r.unitsHigh / 2), clipX(r.cx + r.unitsWide / 2), clipY(r.cy + r.unitsHigh / 2),
    );
    gl.activeTexture(gl.TEXTURE0);
    gl.bindTexture(gl.TEXTURE_2D, this.texture.tex);
    gl.uniform1i(gl.getUniformLocation(this.quad, "u_tex"), 0);
    const at = gl.getAttribLocation(this.quad, "a_pos");
    gl.bindBuffer(gl.ARRAY_BUFFER, this.quadBuffer);
    gl.enableVertexAttribArray(at);
    gl.vertexAttribPointer(at, 2, gl.FLOAT, false, 0, 0);
    gl.drawArrays(gl.TRIANGLE_STRIP, 0, 4);
    this.#drawOverlay();
  }

  #drawOverlay(path = null) {
    const { width, height, ratio } = this.#resize();
    const ctx = this.ctx;
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
    const outline = (points, closed) => {
      ctx.beginPath();
      points.forEach(([x, y], k) => (k ? ctx.lineTo(x, y) : ctx.moveTo(x, y)));
      if (closed) ctx.closePath();
      ctx.lineWidth = 1.5;
      ctx.setLineDash([5, 4]);
      ctx.strokeStyle = "#1f4e8c";
      ctx.stroke();
      ctx.setLineDash([]);
    };
    if (this.polygon) outline(this.polygon.map(([x, y]) => this.toScreen(x, y)), true);
    if (path) outline(path, this.mode === "box");
    const row = this.marked === null ? undefined : this.rowOf?.get(Number(this.marked));
    if (row !== undefined) {
      const [x, y] = this.toScreen(this.xs[row], this.ys[row]);
      ctx.beginPath();
      ctx.arc(x, y, 7, 0, 2 * Math.PI);
      ctx.lineWidth = 2;
      ctx.strokeStyle = "#111";
      ctx.stroke();
    }
  }

  // --- the user's hands ------------------------------------------------------------------------

  #wire() {
    const el = this.overlay;
    let drag = null;
    const at = (event) => { const r = el.getBoundingClientRect(); return [event.clientX - r.left, event.clientY - r.top]; };
    el.addEventListener("pointerdown", (event) => {
      el.setPointerCapture(event.pointerId);
      drag = { start: at(event), last: at(event), path: [at(event)], moved: false };
    });
    el.addEventListener("pointermove", (event) => {
      const [px, py] = at(event);
      if (!drag) {
        const hit = this.nearest(px, py);
        this.onHover(hit, px, py);
        return;
      }
      drag.moved ||= Math.hypot(px - drag.start[0], py - drag.start[1]) > 3;
      if (this.mode === "pan") {
        this.move(px - drag.last[0], py - drag.last[1]);
      } else if (this.mode === "lasso") {
        drag.path.push([px, py]);
        this.#drawOverlay(drag.path);
      } else {
        const [x0, y0] = drag.start;
        drag.path = [[x0, y0], [px, y0], [px, py], [x0, py]];
        this.#drawOverlay(drag.path);
      }
      drag.last = [px, py];
    });
    el.addEventListener("pointerup", (event) => {
      const done = drag;
      drag = null;
      if (!done) return;
      if (!done.moved) {
        const hit = this.nearest(...at(event));
        if (hit) this.onPick(hit);
        return;
      }
      if (this.mode === "pan") return;
      const screen = this.mode === "box" ? done.path : simplify(done.path, 3, 100);
      this.#drawOverlay();
      if (screen.length < 3) return this.onSelection(null, "Draw around the points: a selection needs an area.");
      // Rounded as the address will carry it (two decimals of a map 200 wide), and checked as rounded. At most 100
      // vertices (the server takes 150, search/polygon.py): with the rest of the address, well inside a request line.
      const polygon = screen.map(([x, y]) => this.toMap(x, y).map((v) => Math.round(v * 100) / 100));
      if (crossesItself(polygon)) {
        return this.onSelection(null, "The lasso crosses itself: draw a loop whose edges do not cross.");
      }
      this.onSelection(polygon, "");
    });
    el.addEventListener("pointerleave", () => this.onHover(null));
    el.addEventListener("wheel", (event) => {
      event.preventDefault();
      const [px, py] = at(event);
      this.move(0, 0, Math.exp(-event.deltaY * 0.0015), px, py);
    }, { passive: false });
  }
}
