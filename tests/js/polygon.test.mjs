// The lasso's geometry in the page (static/js/labeling/polygon.js): the same answers as the server's
// (search/polygon.py, tests/search/test_polygon.py), so that the page refuses what the server would.
import assert from "node:assert/strict";
import { test } from "node:test";

import { crossesItself, fromText, inside, simplify, toText } from "../../static/js/labeling/polygon.js";

const square = [[0, 0], [10, 0], [10, 10], [0, 10]];

test("inside, on the edges and vertices, and outside", () => {
  const points = [[5, 5], [0, 5], [10, 7.5], [5, 0], [5, 10], [0, 0], [10, 10], [10.0001, 5], [-0.0001, 5], [5, 10.0001], [20, 20], [11, 0]];
  assert.deepEqual(points.map(([x, y]) => inside(square, x, y)), [true, true, true, true, true, true, true, false, false, false, false, false]);
});

test("a concave polygon leaves its notch out", () => {
  const u = [[0, 0], [9, 0], [9, 9], [6, 9], [6, 3], [3, 3], [3, 9], [0, 9]];
  const points = [[1.5, 6], [7.5, 6], [4.5, 6], [4.5, 3], [4.5, 2], [6, 6], [3, 9]];
  assert.deepEqual(points.map(([x, y]) => inside(u, x, y)), [true, true, false, true, true, true, true]);
});

test("a bow tie and a touching vertex cross; a square and a circle do not", () => {
  assert.equal(crossesItself([[0, 0], [10, 10], [0, 10], [10, 0]]), true);
  assert.equal(crossesItself([[0, 0], [10, 0], [10, 10], [5, 0]]), true);
  assert.equal(crossesItself(square), false);
  const circle = Array.from({ length: 60 }, (_, k) => [Math.cos((k * 2 * Math.PI) / 60), Math.sin((k * 2 * Math.PI) / 60)]);
  assert.equal(crossesItself(circle), false);
});

test("a hand-drawn path is thinned, closed without repeating its start, and capped", () => {
  const path = [[0, 0], [0.5, 0], [5, 0], [10, 0], [10, 10], [0, 10], [0.5, 0.5]];
  assert.deepEqual(simplify(path, 3, 100), [[0, 0], [5, 0], [10, 0], [10, 10], [0, 10]]);
  const long = Array.from({ length: 1000 }, (_, k) => [k * 10, (k % 2) * 10]);
  assert.equal(simplify(long, 3, 200).length, 200);
});

test("the address's text round-trips, and bad text is no polygon", () => {
  assert.deepEqual(fromText(toText(square)), square);
  for (const bad of ["", "1,2,3,4", "1,2,3,4,5", "1,2,3,x,5,6", "1,2,3,NaN,5,6"]) assert.equal(fromText(bad), null, bad);
});
