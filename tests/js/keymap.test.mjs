// The labeling page's keys (static/js/labeling/keymap.js): the README's key table, and what no key does.
import assert from "node:assert/strict";
import { test } from "node:test";

import { actionFor } from "../../static/js/labeling/keymap.js";

test("the label keys, the moves and the page keys", () => {
  const expected = {
    1: "relevant", 0: "not_relevant", u: "unsure", U: "unsure" /* Caps Lock */, Enter: "toggle", " ": "toggle",
    ArrowRight: "right", ArrowDown: "down", z: "undo", n: "next_unlabeled", f: "zoom", l: "more_like_this",
    e: "expand_stack", c: "confirm_prelabel", m: "load_more", s: "submit", Escape: "deselect", x: null, Tab: null,
  };
  for (const [key, action] of Object.entries(expected)) assert.equal(actionFor({ key }), action, key);
});

test("Shift extends a range with the arrows, asks for help with ?, and labels nothing with a letter", () => {
  assert.equal(actionFor({ key: "ArrowLeft", shiftKey: true }), "left");
  assert.equal(actionFor({ key: "?", shiftKey: true }), "help");
  assert.equal(actionFor({ key: "S", shiftKey: true }), null);
  assert.equal(actionFor({ key: "!", shiftKey: true }), null);
});

test("chords belong to the browser", () => {
  for (const modifier of ["ctrlKey", "metaKey", "altKey"]) assert.equal(actionFor({ key: "s", [modifier]: true }), null);
});
