// A download whose figures are computed in the background (annotator/web/exports.py answers 202 meanwhile):
// ask again every few seconds, and once the answer is the file, fetch it once and say so. No reload loop: the
// page itself is never asked for again after the file came.
(() => {
  const status = document.getElementById("computing");
  if (!status) return;
  const seconds = Number(status.dataset.retry || 3);
  const url = window.location.href;
  async function ask() {
    let answer = null;
    try {
      answer = await fetch(url, { method: "HEAD", credentials: "same-origin", cache: "no-store" });
    } catch (error) {
      answer = null;
    }
    if (answer && answer.status === 200) {
      status.textContent = "Ready: the download has started.";
      window.location.assign(url);
      return;
    }
    if (answer && answer.status !== 202) {
      status.textContent = `The figures could not be computed (${answer.status}): ask again below, or read the server's log.`;
      return;
    }
    setTimeout(ask, seconds * 1000);
  }
  setTimeout(ask, seconds * 1000);
})();
