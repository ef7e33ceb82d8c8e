// Keys and tile clicks that arrive before the labeling page's modules are wired (labeling/main.js is a module: it
// runs after the document is parsed and its imports are fetched, a second or more on a loaded machine).
// A classic script in <head>, so it listens from the first frame: it keeps what it sees, in order, and
// main.js takes the list (window.quireEarlyInput.take()) once its own listeners are in place, then plays it
// through the same handlers. Until then the status line says the page is starting and keeps the keys; it
// never says "saved" (main.js writes the line from the save queue alone).
(() => {
  // As main.js reads them: a control typed into keeps its keys, a button or a link only the keys that press it.
  const TYPED_INTO = "input, select, textarea, [contenteditable]";
  const PRESSES = new Set(["Enter", " ", "Tab"]);
  const PRESSED = "button, a[href], summary";
  const MODIFIERS = new Set(["Shift", "Alt", "Control", "Meta", "AltGraph", "CapsLock"]);
  const SCROLLING = new Set([" ", "ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight", "PageUp", "PageDown"]);
  const kept = [];
  let taking = true;

  function onKey(event) {
    if (!taking || MODIFIERS.has(event.key) || !event.target.closest) return;
    if (event.target.closest(TYPED_INTO) || (PRESSES.has(event.key) && event.target.closest(PRESSED))) return;
    const { key, code, shiftKey, ctrlKey, metaKey, altKey } = event;
    kept.push({ kind: "key", key, code, shiftKey, ctrlKey, metaKey, altKey });
    if (!ctrlKey && !metaKey && !altKey && SCROLLING.has(key)) event.preventDefault();
    say();
  }

  function onClick(event) {
    const tile = taking && event.target.closest && event.target.closest(".tile");
    if (!tile) return;
    kept.push({ kind: "click", imageId: tile.dataset.imageId, shiftKey: event.shiftKey, altKey: event.altKey });
    event.preventDefault();
    say();
  }

  function say() {
    const status = document.getElementById("save-status");
    if (!status) return;
    const n = kept.length;
    status.className = "saving";
    status.textContent = `Starting… ${n} ${n === 1 ? "key or click" : "keys and clicks"} kept, acted on when the page is ready`;
  }

  document.addEventListener("keydown", onKey, true);
  document.addEventListener("click", onClick, true);
  window.quireEarlyInput = {
    take() {
      taking = false;
      document.removeEventListener("keydown", onKey, true);
      document.removeEventListener("click", onClick, true);
      return kept.splice(0);
    },
  };
})();
