// @microsoft/fetch-event-source follows a run through the cutting proxy.
// MODE default: fetchEventSource(url, {headers, onmessage}) and nothing
// else; its promise must resolve at the clean end of the body after the
// terminal event, and a cut must make it retry with last-event-id. It
// reads with the global fetch: Node 20's (undici 6) takes the end of a
// "Connection: close" response for the end of its body even mid-chunk,
// so there a cut still looks like a clean end.
// MODE readme: its README's pattern (onopen checks, onclose and onerror
// retry, FatalError stops), which retries even after a clean end: the
// server's long retry: with the terminal event must keep it from another
// request for GRACE, after which it is aborted.
// Node shims: the library calls window.setTimeout/clearTimeout and
// document.removeEventListener (in dispose, even with openWhenHidden), so
// window is globalThis and document a stub. openWhenHidden: true keeps it
// from listening for visibility changes.
import { Log, url, auth, mode, GRACE } from "./cutlib.mjs";

globalThis.window = globalThis;
globalThis.document = { hidden: false, addEventListener() {}, removeEventListener() {} };
const { fetchEventSource, EventStreamContentType } = await import("@microsoft/fetch-event-source");

const log = new Log(`fetch-event-source ${mode}`);
const ctrl = new AbortController(); // the harness's own bound
const opts = {
  headers: auth,
  openWhenHidden: true,
  fetch: log.fetch(),
  signal: ctrl.signal,
  onmessage: (m) => log.event(m.id, m.event), // also called for the retry: block and heartbeats
};
class RetriableError extends Error {}
class FatalError extends Error {}
if (mode === "readme") {
  Object.assign(opts, {
    async onopen(response) {
      if (response.ok && response.headers.get("content-type") === EventStreamContentType) return;
      if (response.status >= 400 && response.status < 500 && response.status !== 429) throw new FatalError(`status ${response.status}`);
      throw new RetriableError(`status ${response.status}`);
    },
    onclose() {
      throw new RetriableError("closed"); // the server closed the connection: retry
    },
    onerror(err) {
      if (err instanceof FatalError) throw err; // stop
      // anything else: retry after the server's retry: interval
    },
  });
}
let outcome = "pending";
const done = fetchEventSource(url, opts).then(
  () => (outcome = ctrl.signal.aborted ? "aborted" : "resolved"),
  (e) => (outcome = `rejected: ${e.message}`),
);
await log.afterTerminal(GRACE, () => outcome !== "pending");
// readme: aborted GRACE after the terminal event, its user being done;
// default: it must have resolved by itself (else no stop is logged: a failure).
if (mode === "readme" || outcome === "resolved") log.stop(outcome === "pending" ? "abort" : outcome);
ctrl.abort();
await done;
await log.verdict(0, { promise: outcome });
