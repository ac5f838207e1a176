// A webhook receiver that checks deliveries with the standardwebhooks
// package (the Standard Webhooks specification's own library): a run's
// delivery and its redelivery must both verify against the account's
// secret, carry the same webhook-id (the terminal event's id), and say
// how the run ended.
import http from "node:http";
import { Webhook } from "standardwebhooks";

const [base, key] = process.argv.slice(2);
const api = (path, init = {}) =>
  fetch(`${base}${path}`, { ...init, headers: { ...init.headers, Authorization: `Bearer ${key}` } });
const fail = (msg) => {
  console.error(`webhook: ${msg}`);
  process.exit(1);
};

const { secret } = await (await api("/api/v1/webhooks/secret")).json();
const wh = new Webhook(secret);
const got = [];
let arrived;
const srv = http.createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    try {
      const payload = wh.verify(body, req.headers);
      got.push({ id: req.headers["webhook-id"], type: payload.type, runNo: payload.data.run_no });
      res.writeHead(204).end();
    } catch (e) {
      got.push({ error: e.message });
      res.writeHead(400).end();
    }
    arrived?.();
  });
});
await new Promise((ok) => srv.listen(0, "127.0.0.1", ok));
const hook = `http://127.0.0.1:${srv.address().port}/hook`;
const next = (n) =>
  new Promise((ok, no) => {
    const t = setTimeout(() => no(new Error(`${got.length} of ${n} deliveries within 20 s`)), 20000);
    arrived = () => got.length >= n && (clearTimeout(t), ok());
    arrived();
  });

const created = await api("/api/v1/runs", {
  method: "POST",
  headers: { "Content-Type": "application/json" },
  body: JSON.stringify({
    app_slug: "cold-email-writer",
    input: { product_description: "Acme Ledger automates bookkeeping for agencies", target_role: "Agency founders" },
    webhook_url: hook,
  }),
});
if (created.status !== 201) fail(`create: ${created.status} ${await created.text()}`);
const { run_no: runNo } = await created.json();
await next(1).catch((e) => fail(e.message));
const again = await api(`/api/v1/webhooks/deliveries/${runNo}/redeliver`, { method: "POST" });
if (again.status !== 202) fail(`redeliver: ${again.status} ${await again.text()}`);
await next(2).catch((e) => fail(e.message));
srv.close();
console.log("webhook:", JSON.stringify(got));
const ok = got.length === 2 && got.every((d) => !d.error && d.type === "run.completed" && d.runNo === runNo) && got[0].id === got[1].id;
if (!ok) fail("want 2 deliveries that verify, run.completed for the run, with one webhook-id");
