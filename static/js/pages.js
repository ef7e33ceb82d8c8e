// Small behaviours every page may use, kept out of the HTML so that the Content-Security-Policy can refuse
// inline scripts (quire/middleware.py).
//   <select data-autosubmit>        submits its form when changed
//   <body data-replace-url="/x/">   replaces the address (a page answered to a POST: a reload must not re-send it)
document.addEventListener("change", (event) => {
  if (event.target.matches("select[data-autosubmit]")) event.target.form.requestSubmit();
});
document.addEventListener("DOMContentLoaded", () => {
  const marked = document.querySelector("[data-replace-url]");
  if (marked) history.replaceState(null, "", marked.dataset.replaceUrl);
});
