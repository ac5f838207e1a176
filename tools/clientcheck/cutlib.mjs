// What the Node clients of the cut check share (gocheck/check is the Go
// twin): the log of what a client saw and sent, and the verdict, which
// compares it with a direct read of the finished run's stream.
// Command line: MODE BASE PROXY KEY RUN CUT (MODE: which client, or how it is used).
export const [mode, base, proxy, key, runNo, cut] = process.argv.slice(2);
export const url = `${proxy}/api/v1/runs/${runNo}/events`;
export const auth = { Authorization: `Bearer ${key}` };
export const GRACE = 5000; // ms a client may take to stop after the terminal event
const SLACK = 250; // ms of the harness's own polling, when it closes a client at GRACE
export const terminal = (kind) => ["completed", "failed", "canceled"].includes(kind);
export const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));

export class Log {
  constructor(name) {
    this.name = name;
    this.events = [];
    this.requests = [];
    this.terminalAt = 0;
    this.stoppedAt = 0;
    this.endedBy = "";
  }
  // Blocks without a kind (the retry: block, a heartbeat) are not events.
  event(id, kind) {
    if (!kind) return;
    this.events.push({ id, kind });
    if (terminal(kind) && !this.terminalAt) this.terminalAt = Date.now();
  }
  request(lastEventId) {
    this.requests.push({ at: Date.now(), lastEventId: lastEventId ?? "", lastSeen: this.events.at(-1)?.id ?? "" });
  }
  stop(endedBy) {
    if (!this.stoppedAt) [this.stoppedAt, this.endedBy] = [Date.now(), endedBy];
  }
  // A fetch that counts requests with the id they resume after, and adds the key.
  fetch(inner = globalThis.fetch) {
    return (input, init = {}) => {
      this.request(new Headers(init.headers).get("last-event-id"));
      return inner(input, { ...init, headers: { ...init.headers, ...auth } });
    };
  }
  // Resolves on the terminal event plus ms, or at the deadline.
  async afterTerminal(ms, until = () => false, deadline = Date.now() + 30000) {
    while (Date.now() < deadline && !until() && !(this.terminalAt && Date.now() >= this.terminalAt + ms)) await sleep(20);
  }

  // Waits a second for stray requests, reads the run directly, prints one
  // summary line and exits 1 naming each failed assertion: the client saw
  // exactly the direct read's events (each once, in order, none missing),
  // the terminal one last; it was cut and resumed, each resume after the
  // newest event it had; it stopped within GRACE of the terminal event,
  // sent at most maxAfterTerminal requests after it and none after it stopped.
  async verdict(maxAfterTerminal, extra = {}) {
    await sleep(1000);
    const bad = [];
    let want = [];
    try {
      want = await direct();
      if (want.length !== 32) bad.push(`the run's stream has ${want.length} events, not 32`);
    } catch (e) {
      bad.push(`direct read: ${e.message}`);
    }
    const key = (e) => `${e.id}/${e.kind}`;
    const got = this.events.map(key).join(" ");
    if (got !== want.map(key).join(" ")) {
      const i = this.events.findIndex((e, i) => key(e) !== (want[i] && key(want[i])));
      const at = i < 0 ? this.events.length : i;
      bad.push(`saw ${this.events.length} events, the stream has ${want.length}: first difference at ${at}: saw ${this.events[at] ? key(this.events[at]) : "nothing"}, want ${want[at] ? key(want[at]) : "nothing"}`);
    }
    if (!terminal(this.events.at(-1)?.kind)) bad.push("the last event seen is not terminal");
    this.requests.forEach((r, i) => {
      if (r.lastEventId !== r.lastSeen) bad.push(`request ${i + 1} resumed after "${r.lastEventId}", the newest event seen was "${r.lastSeen}"`);
    });
    if (this.requests.length < 2) bad.push("no second request: the stream was not cut, or the client did not resume");
    const after = this.requests.filter((r) => this.terminalAt && r.at > this.terminalAt).length;
    const afterStop = this.requests.filter((r) => this.stoppedAt && r.at > this.stoppedAt).length;
    let stopMs = -1;
    if (!this.terminalAt) bad.push("no terminal event");
    else if (!this.stoppedAt) bad.push("the client did not stop");
    else if ((stopMs = this.stoppedAt - this.terminalAt) > GRACE + SLACK) bad.push(`stopped ${stopMs} ms after the terminal event, more than ${GRACE}`);
    if (after > maxAfterTerminal) bad.push(`${after} requests after the terminal event, at most ${maxAfterTerminal}`);
    if (afterStop) bad.push(`${afterStop} requests after it stopped`);
    const report = {
      cut, events: this.events.length, want: want.length, requests: this.requests.length,
      resumed_after: this.requests.slice(1).map((r) => r.lastEventId), after_terminal: after,
      stop_ms: stopMs, ended_by: this.endedBy, ...extra, ok: bad.length === 0,
    };
    console.log(`${this.name}: ${JSON.stringify(report)}`);
    if (bad.length) {
      console.error(`${this.name}: ${bad.join("; ")}`);
      process.exit(1);
    }
    process.exit(0);
  }
}

// direct reads the run's whole stream from the node, not through the
// proxy; on a finished run it ends after the terminal event.
async function direct() {
  const res = await fetch(`${base}/api/v1/runs/${runNo}/events`, { headers: auth, signal: AbortSignal.timeout(20000) });
  if (res.status !== 200) throw new Error(`status ${res.status}`);
  const events = [];
  for (const block of (await res.text()).split(/\r?\n\r?\n/)) {
    const field = (name) => block.split(/\r?\n/).find((l) => l.startsWith(`${name}:`))?.slice(name.length + 1).trim();
    if (field("event")) events.push({ id: field("id") ?? "", kind: field("event") });
  }
  return events;
}
