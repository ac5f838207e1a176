// An EventSource (the eventsource package: the WHATWG algorithm) left open
// on a run until well after it finished. It must see each of the spec's
// event kinds in order, the terminal event once, and reconnect at most
// once: the server answers a resume after the end with 204, which ends
// EventSource's reconnects; since the terminal event comes with a retry:
// of a day, it does not reconnect at all in the 8 s (either passes).
import { EventSource } from "eventsource";

const [base, key, runNo] = process.argv.slice(2);
let connections = 0;
const seen = [];
const es = new EventSource(`${base}/api/v1/runs/${runNo}/events`, {
  fetch: (input, init) => {
    connections++;
    return fetch(input, { ...init, headers: { ...init.headers, Authorization: `Bearer ${key}` } });
  },
});
for (const kind of ["started", "tool_running", "completed", "failed", "canceled"]) {
  es.addEventListener(kind, (e) => seen.push(`${kind}#${e.lastEventId}`));
}
// The server sends retry: 3000, so 8 s leaves room for two reconnects.
setTimeout(() => {
  const closedByServer = es.readyState === EventSource.CLOSED; // the 204 ended it
  es.close();
  const terminal = seen.filter((s) => s.startsWith("completed") || s.startsWith("failed"));
  const kinds = new Set(seen.map((s) => s.split("#")[0]));
  const report = { connections, events: seen.length, terminal: terminal.length, kinds: [...kinds], closedByServer };
  console.log("eventsource:", JSON.stringify(report));
  const ok = (connections === 1 || (connections === 2 && closedByServer)) && terminal.length === 1 && kinds.has("started") && !kinds.has("canceled") && seen.at(-1) === terminal[0];
  if (!ok) {
    console.error("eventsource: want 1 connection, or 2 closed by the server's 204, the terminal event once and last, and only the spec's kinds");
    process.exit(1);
  }
}, 8000);
