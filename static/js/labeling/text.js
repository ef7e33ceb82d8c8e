// What the labeling page writes into the page: label names and escaped HTML.

export const NAMES = {
  relevant: "Relevant", not_relevant: "Not relevant", unsure: "Unsure", "": "Not labeled yet",
  undecided: "Undecided: annotators disagree (waiting for adjudication)",
};

export function escape(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

export function plural(count, word) {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}

// Structured rerank: each sub-question with the model's P(yes): why the image ranks where it does.
export function why(json) {
  if (!json) return "";
  let pairs = [];
  try { pairs = JSON.parse(json); } catch (error) { return ""; }
  if (!Array.isArray(pairs)) return "";
  const items = pairs.map(([question, p]) =>
    `<li>${escape(question)} <strong>${p >= 0.5 ? "yes" : "no"}</strong> <span class="muted">(${Number(p).toFixed(2)})</span></li>`);
  return `<div class="why"><h4>The vision model's answers</h4><ol>${items.join("")}</ol></div>`;
}

export function stackNote(count) {
  if (!count) return "";
  return `<p class="stack-note"><strong>${plural(count, "look-alike")}</strong> wait behind this image
    (near-identical: you called one like it not relevant). A label key labels ${count === 1 ? "it" : "them all"} too,
    each with its own history; <kbd>e</kbd> shows ${count === 1 ? "it" : "them"} as tiles of their own.</p>`;
}
