// Two WHATWG EventSources follow a run through the cutting proxy, as a
// page would: the eventsource package (MODE eventsource) and undici's
// (MODE undici). They must resume by themselves with Last-Event-ID. They
// are not closed on the terminal event: a resume after it is answered 204,
// which closes them ("server"); one still waiting to reconnect (the
// server's long retry: with the terminal event) is closed GRACE after it
// ("close"), as a page done with the run would. Either passes.
import { Log, url, auth, mode, GRACE } from "./cutlib.mjs";

const log = new Log(mode);
let es;
if (mode === "undici") {
  const { EventSource, Agent } = await import("undici");
  // undici's EventSource takes no headers: an interceptor adds the key.
  const dispatcher = new Agent().compose((dispatch) => (opts, handler) => {
    const h = Object.fromEntries(Object.entries(opts.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
    log.request(h["last-event-id"]);
    return dispatch({ ...opts, headers: { ...opts.headers, ...auth } }, handler);
  });
  es = new EventSource(url, { dispatcher });
} else {
  const { EventSource } = await import("eventsource");
  es = new EventSource(url, { fetch: log.fetch() });
}
for (const kind of ["started", "tool_running", "completed", "failed", "canceled"]) {
  es.addEventListener(kind, (e) => log.event(e.lastEventId, e.type));
}
es.addEventListener("error", () => es.readyState === es.CLOSED && log.stop("server"));
await log.afterTerminal(GRACE, () => log.stoppedAt);
es.close();
log.stop("close");
await log.verdict(1); // the one resume a 204 answers
