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

// htmx requests that are refused or never answered (common/refusals.py): htmx 2 swaps neither, so without
// this a refused button does nothing visible. A refusal drawn for the request's target (X-Quire-Refusal:
// fragment) is swapped in like any answer; any other is a sentence, shown next to the control that asked
// (a link to log in when the session ended), and cleared by that control's next answer.
document.addEventListener("htmx:beforeSwap", (event) => {
  const xhr = event.detail.xhr;
  if (xhr.status < 400) return;
  if (xhr.getResponseHeader("X-Quire-Refusal") === "fragment") {
    event.detail.shouldSwap = true;
    event.detail.isError = false;
    return;
  }
  event.detail.shouldSwap = false;
  const sentence = xhr.responseText && !/^\s*</.test(xhr.responseText)
    ? xhr.responseText : `The request was refused (${xhr.status}): reload the page and try again.`;
  showRefusal(askingOf(event), sentence, xhr.getResponseHeader("X-Login-Url"));
});
document.addEventListener("htmx:sendError", (event) => {
  showRefusal(askingOf(event), "The server did not answer: check the connection, then try again.");
});
document.addEventListener("htmx:afterRequest", (event) => {
  if (!event.detail.successful) return;
  const note = refusalNote(askingOf(event), false);
  if (note) note.remove();
});

function askingOf(event) {  // the element whose request it was
  return (event.detail.requestConfig && event.detail.requestConfig.elt) || event.detail.elt;
}

function refusalNote(asking, create) {
  const place = asking.closest("form") || asking;
  const next = place.nextElementSibling;
  if (next && next.matches(".refusal")) return next;
  if (!create || !place.isConnected) return null;
  const note = document.createElement("p");
  note.className = "notice error refusal";
  note.setAttribute("role", "alert");
  place.after(note);
  return note;
}

function showRefusal(asking, sentence, loginUrl) {
  const note = refusalNote(asking, true);
  if (!note) return;
  note.textContent = sentence;
  if (loginUrl) {
    const link = document.createElement("a");
    link.href = loginUrl;
    link.textContent = "Log in";
    note.append(" ", link);
  }
}

// A form is sent once: a second submit while the first is under way (a double click on "Add and start
// labeling" or "Score it") is dropped, and the form's buttons are disabled while it is sent; the database
// refuses what slips through (one query a text). Disabled after the browser has read the form, so the
// pressed button's name still goes with it; enabled again when the page is shown from the back button's
// cache. htmx's forms are left to htmx.
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (form.method !== "post" || form.matches("[hx-post], [hx-get]")) return;
  if (form.dataset.sending) {
    event.preventDefault();
    return;
  }
  setTimeout(() => {
    if (event.defaultPrevented) return;  // a script handles this form itself
    form.dataset.sending = "1";
    form.setAttribute("aria-busy", "true");
    for (const button of form.querySelectorAll("button:not([disabled]), input[type=submit]:not([disabled])")) {
      button.disabled = true;
      button.dataset.disabledWhileSending = "1";
    }
  });
});
window.addEventListener("pageshow", () => {
  for (const form of document.querySelectorAll("form[data-sending]")) {
    delete form.dataset.sending;
    form.removeAttribute("aria-busy");
    for (const button of form.querySelectorAll("[data-disabled-while-sending]")) {
      button.disabled = false;
      delete button.dataset.disabledWhileSending;
    }
  }
});
