// The lasso's geometry in the page, the same rules as the server's (search/polygon.py): inside includes the
// boundary, and a polygon whose edges cross is refused before it is sent.

// Whether (x, y) is inside `polygon` ([[x, y], ...]) or on its edge (even-odd rule).
export function inside(polygon, x, y) {
  let crossing = false;
  for (let i = 0, j = polygon.length - 1; i < polygon.length; j = i, i += 1) {
    const [ax, ay] = polygon[j], [bx, by] = polygon[i];
    const cross = (bx - ax) * (y - ay) - (by - ay) * (x - ax);
    if (Math.abs(cross) <= 1e-9 * Math.max(Math.abs(bx - ax), Math.abs(by - ay), 1e-300) * Math.max(1, Math.hypot(x - ax, y - ay))
      && x >= Math.min(ax, bx) && x <= Math.max(ax, bx) && y >= Math.min(ay, by) && y <= Math.max(ay, by)) return true;
    if (ay !== by && (ay > y) !== (by > y) && x < ax + ((y - ay) * (bx - ax)) / (by - ay)) crossing = !crossing;
  }
  return crossing;
}

const orient = (p, q, r) => Math.sign((q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0]));
const within = (p, q, r) =>
  Math.min(p[0], q[0]) <= r[0] && r[0] <= Math.max(p[0], q[0]) && Math.min(p[1], q[1]) <= r[1] && r[1] <= Math.max(p[1], q[1]);

// Whether two edges that share no vertex meet.
export function crossesItself(polygon) {
  const n = polygon.length;
  for (let i = 0; i < n; i += 1) {
    for (let j = i + 2; j < n; j += 1) {
      if (i === 0 && j === n - 1) continue;
      const [p1, q1, p2, q2] = [polygon[i], polygon[(i + 1) % n], polygon[j], polygon[(j + 1) % n]];
      const [o1, o2, o3, o4] = [orient(p1, q1, p2), orient(p1, q1, q2), orient(p2, q2, p1), orient(p2, q2, q1)];
      if (o1 !== o2 && o3 !== o4 && o1 && o2 && o3 && o4) return true;
      if ((!o1 && within(p1, q1, p2)) || (!o2 && within(p1, q1, q2)) || (!o3 && within(p2, q2, p1)) || (!o4 && within(p2, q2, q1))) return true;
    }
  }
  return false;
}

// A hand-drawn path thinned: points at least `step` apart, at most `most` of them (evenly kept).
export function simplify(path, step, most) {
  const kept = [];
  for (const point of path) {
    const last = kept[kept.length - 1];
    if (!last || Math.hypot(point[0] - last[0], point[1] - last[1]) >= step) kept.push(point);
  }
  // A lasso closed by returning to its start: the last point is the first again, not a vertex of its own.
  while (kept.length > 3 && Math.hypot(kept[kept.length - 1][0] - kept[0][0], kept[kept.length - 1][1] - kept[0][1]) < step) kept.pop();
  if (kept.length <= most) return kept;
  return Array.from({ length: most }, (_, k) => kept[Math.floor((k * kept.length) / most)]);
}

// The polygon as the address's within= text, and back.
export const toText = (polygon) => polygon.map(([x, y]) => `${+x.toFixed(2)},${+y.toFixed(2)}`).join(",");
export function fromText(text) {
  const numbers = (text || "").split(",").map(Number);
  if (numbers.length < 6 || numbers.length % 2 || numbers.some((v) => !Number.isFinite(v))) return null;
  return Array.from({ length: numbers.length / 2 }, (_, k) => [numbers[2 * k], numbers[2 * k + 1]]);
}
