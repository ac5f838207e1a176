// apprun's only script: copy buttons, the App search, and the live view of a run, which
// follows its event stream (EventSource sends the session cookie) and
// reloads the page when the run ends, so the server renders the report.
"use strict";
document.addEventListener("click", (ev) => {
  const b = ev.target.closest("button[data-copy]");
  if (!b) return;
  const text = b.dataset.copy.split(",").map((sel) => {
    const el = document.querySelector(sel);
    return el ? el.textContent : "";
  }).join("\n\n");
  navigator.clipboard.writeText(text).then(() => {
    const label = b.textContent;
    b.textContent = "Copied";
    setTimeout(() => { b.textContent = label; }, 1500);
  }, () => { b.textContent = "Select and copy by hand"; });
});

// The App search narrows the cards as one types (the form still sends
// ?q= without script, and the server narrows the same way: every word
// must be in the card's data-search).
const search = document.getElementById("app-search");
if (search) {
  const count = document.getElementById("app-count");
  const none = document.getElementById("app-none");
  const nav = document.querySelector("nav.categories");
  const total = document.querySelectorAll("[data-search]").length;
  search.addEventListener("input", () => {
    const words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
    let shown = 0;
    document.querySelectorAll("section.category").forEach((sec) => {
      let inSec = 0;
      sec.querySelectorAll("[data-search]").forEach((card) => {
        const hit = words.every((w) => card.dataset.search.includes(w));
        card.hidden = !hit;
        if (hit) inSec++;
      });
      sec.hidden = inSec === 0;
      shown += inSec;
    });
    if (nav) nav.hidden = words.length > 0;
    if (none) none.hidden = shown > 0;
    if (count) count.textContent = words.length ? shown + (shown === 1 ? " App matches" : " Apps match") + " “" + search.value.trim() + "”." : total + (total === 1 ? " App" : " Apps");
  });
}

const live = document.getElementById("live");
if (live && live.dataset.follow === "1") {
  const status = document.getElementById("status");
  const progress = document.getElementById("progress");
  // The page already lists the steps up to data-last: follow from there.
  const src = new EventSource("/api/v1/runs/" + encodeURIComponent(live.dataset.run) + "/events?lastEventSeq=" +
    encodeURIComponent(live.dataset.last || "0"));
  const show = (state) => {
    status.textContent = state;
    status.className = "status " + state;
    live.dataset.status = state;
  };
  src.addEventListener("started", () => show("running"));
  // One line says what the run does now, updated in place; the list has
  // each step once (a step that reports again updates its item), and a
  // wait for the model (its tool in data-wait-tool) is said on the line
  // only (web/runlive.go).
  const line = document.getElementById("progress-line");
  src.addEventListener("tool_running", (e) => {
    const d = JSON.parse(e.data);
    show("running");
    const text = (d.steps > 1 ? "Step " + d.step + " of " + d.steps + ": " : "") + (d.message || d.tool || "working");
    if (line) line.textContent = text;
    if (d.tool === live.dataset.waitTool) return;
    const last = progress.lastElementChild;
    if (last && last.dataset.tool === d.tool) {
      last.textContent = text;
      return;
    }
    const li = document.createElement("li");
    li.dataset.tool = d.tool || "";
    li.textContent = text;
    progress.appendChild(li);
    while (progress.children.length > 12) progress.removeChild(progress.firstElementChild);
  });
  const end = (state) => () => {
    src.close();
    show(state);
    setTimeout(() => location.reload(), 300);
  };
  src.addEventListener("completed", end("completed"));
  src.addEventListener("failed", end("failed"));
  // A 204 (the run ended before this page followed it) closes the stream
  // without an event: reload to show the result.
  src.addEventListener("error", () => {
    if (src.readyState !== EventSource.CLOSED) return; // it reconnects by itself
    const key = "apprun-reload-" + live.dataset.run;
    if (Date.now() - Number(sessionStorage.getItem(key) || 0) < 10000) return; // once, not a loop
    sessionStorage.setItem(key, String(Date.now()));
    setTimeout(() => location.reload(), 300);
  });
}
