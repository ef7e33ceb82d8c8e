// The adjudication queue's keys: 1 relevant, 0 not relevant, u unsure, on the first image of the queue.
// The form posts as it would with a click, so the server's answer (the next image, or the reason it
// refused) is what the page shows.
(() => {
  const KEYS = { 1: "relevant", 0: "not_relevant", u: "unsure" };
  document.addEventListener("keydown", (event) => {
    if (event.target.matches("input, textarea, select") || event.ctrlKey || event.metaKey || event.altKey) return;
    const value = KEYS[event.key.toLowerCase()];
    const form = document.querySelector(".adjudication form.decide");
    if (!value || !form) return;
    event.preventDefault();
    form.querySelector(`button[value="${value}"]`).click();
  });
})();

// A decision sent while the session had ended comes back through the login (?unsaved=IMAGE:VALUE): it is sent
// again now, as the labeling page sends its waiting labels after logging in; the server's answer is the page.
(() => {
  const kept = document.getElementById("kept-decision");
  if (!kept) return;
  kept.querySelector("button").click();
})();
