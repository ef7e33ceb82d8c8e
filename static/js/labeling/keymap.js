// The labeling page's keys: which action a key press asks for. Pure, so that Node tests it; the page
// (main.js) maps each action name to what it does.

export const KEYS = {
  ArrowRight: "right", ArrowLeft: "left", ArrowDown: "down", ArrowUp: "up",
  Enter: "toggle", " ": "toggle",
  1: "relevant", 0: "not_relevant", u: "unsure",
  z: "undo", n: "next_unlabeled", f: "zoom", l: "more_like_this", e: "expand_stack", c: "confirm_prelabel",
  m: "load_more", s: "submit", "?": "help", Escape: "deselect",
};

// The action for a keydown, or null: modifier chords belong to the browser, and a shifted letter is no
// label key (Shift with the arrows extends the selection; "?" needs Shift on most layouts).
export function actionFor({ key, shiftKey = false, ctrlKey = false, metaKey = false, altKey = false }) {
  if (ctrlKey || metaKey || altKey) return null;
  const single = key.length === 1;
  if (single && shiftKey && key !== "?") return null;
  return KEYS[single ? key.toLowerCase() : key] ?? null;
}
