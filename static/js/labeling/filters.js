// The search form above the grid: taxon filters as chips, "more like this" chips, and the controls that
// apply when changed. shownIds() lists the tiles on the page, which a ranking that learns must not propose.

export function wireSearchForm(form, { shownIds, csrfToken }) {
  const taxonBox = form.querySelector('input[type="text"][name="taxon"]');
  const suggestions = document.getElementById("suggestions");
  // A suggestion becomes a chip and the search runs again; × removes one.
  const choose = (choice) => {
    const chip = document.createElement("input");
    Object.assign(chip, { type: "hidden", name: "taxon", value: choice.dataset.value });
    form.querySelector(".chips").append(chip);
    taxonBox.value = "";
    form.requestSubmit();
  };
  suggestions.addEventListener("click", (event) => {
    const choice = event.target.closest(".suggestion");
    if (choice) choose(choice);
  });
  taxonBox.addEventListener("keydown", (event) => {
    // ↓ from the box moves into the suggestions; Enter there picks one (a button's own action).
    if (event.key === "ArrowDown") {
      const first = document.querySelector("#suggestions .suggestion");
      if (first) { event.preventDefault(); first.focus(); }
    }
  });
  suggestions.addEventListener("keydown", (event) => {
    const items = Array.from(document.querySelectorAll("#suggestions .suggestion"));
    const at = items.indexOf(event.target);
    if (event.key === "ArrowDown" && at >= 0) { event.preventDefault(); items[Math.min(at + 1, items.length - 1)].focus(); }
    if (event.key === "ArrowUp" && at >= 0) { event.preventDefault(); (at ? items[at - 1] : taxonBox).focus(); }
  });
  form.querySelector(".chips").addEventListener("click", (event) => {
    if (!event.target.classList.contains("remove")) return;
    event.target.closest(".chip").remove();
    form.requestSubmit();
  });
  form.querySelectorAll(".like .remove").forEach((button) =>
    button.addEventListener("click", () => {
      button.closest(".like").remove();
      if (!form.querySelector(".like")) {  // the last one: back to the ranking before "more like this"
        const before = new URLSearchParams(window.location.search).get("before");
        const known = [...form.elements.ranking.options].some((option) => option.value === before);
        form.elements.ranking.value = known && before !== "image" ? before : "text";
      }
      form.requestSubmit();
    }));
  form.addEventListener("submit", () => { if (!taxonBox.value.trim()) taxonBox.disabled = true; });
  // A ranking that learns is asked with POST: the images on the page must not come again.
  document.body.addEventListener("htmx:configRequest", (event) => {
    if (!event.detail.elt.matches?.('[data-adaptive="1"]')) return;
    event.detail.parameters.shown = shownIds();
    event.detail.headers["X-CSRFToken"] = csrfToken();
  });
  // hide labeled and the page size apply when changed.
  form.querySelectorAll("[data-apply]").forEach((control) => control.addEventListener("change", () => form.requestSubmit()));
}
