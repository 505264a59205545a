// Intents per second over the HTTP API: CONNECTIONS keep-alive connections, each POSTing one edit at a time
// (the next once the last is answered) to its own row of one table, each with an Idempotency-Key, for SECONDS.
//   node scripts/http-bench.mjs http://127.0.0.1:9000 [CONNECTIONS=16] [SECONDS=10]
import http from "node:http";

const [base = "http://127.0.0.1:9000", connections = "16", seconds = "10"] = process.argv.slice(2);
const count = Number(connections);
const agent = new http.Agent({ keepAlive: true, maxSockets: count });
const url = new URL(base);
const table = `bench-${Date.now().toString(36)}`;

function request(method, path, body, headers = {}) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const req = http.request(
      {
        agent, host: url.hostname, port: url.port, method, path,
        headers: { ...(data ? { "content-type": "application/json", "content-length": data.length } : {}), ...headers },
      },
      (res) => {
        const chunks = [];
        res.on("data", (chunk) => chunks.push(chunk));
        res.on("end", () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString() }));
      });
    req.on("error", reject);
    req.end(data);
  });
}

const rows = Array.from({ length: count }, (_, i) => ({ value: `row ${i}` }));
const created = await request("POST", "/v1/tables", { table, sections: [{ rows }] });
if (created.status !== 201) throw new Error(`create: ${created.status} ${created.body}`);
const snapshot = JSON.parse((await request("GET", `/v1/tables/${table}`)).body);
const ids = snapshot.sections[0].rows.map((row) => row.id);

const deadline = Date.now() + Number(seconds) * 1000;
const latencies = [];
let refused = 0;
async function writer(index) {
  for (let n = 0; Date.now() < deadline; n++) {
    const started = process.hrtime.bigint();
    const answer = await request(
      "POST", `/v1/tables/${table}/intents`,
      { type: "edit", at: [0, index], row: ids[index], value: `w${index} ${n}` },
      { "idempotency-key": `w${index}-${n}` });
    if (answer.status !== 200) refused++;
    else latencies.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
}
const start = Date.now();
await Promise.all(Array.from({ length: count }, (_, i) => writer(i)));
const elapsed = (Date.now() - start) / 1000;
latencies.sort((a, b) => a - b);
const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]?.toFixed(2);
console.log(
  `${count} connections, ${elapsed.toFixed(1)} s: ${Math.round(latencies.length / elapsed)} intents/s acknowledged, ` +
    `${refused} refused; latency p50 ${at(0.5)} ms, p99 ${at(0.99)} ms`);
agent.destroy();
