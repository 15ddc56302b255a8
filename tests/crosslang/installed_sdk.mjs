// What a new user writes after `npm install` of the packed SDK (test_typescript_install.py):
// a tool run twice (the second replays), and the two errors a wrong setup meets first.
import { ConfigurationError, LedgerClient, ServeUnreachableError, runTool } from "@oncelog/sdk";

const client = new LedgerClient({ workerId: "installed" });  // ONCELOG_URL, ONCELOG_HTTP_WRITE_TOKEN
let calls = 0;
const args = {
  channelId: `installed-${process.pid}-${Date.now()}`, keyName: "refund:1", toolName: "refund",
  params: { order: 1 }, leaseSeconds: 30, reconcile: async () => null,
  fn: async (ctx) => { calls += 1; return { refund: ctx.idempotencyKey.slice(0, 8) }; },
};
const first = await runTool(client, args);
const again = await runTool(client, args);
const errors = {};
const url = process.env.ONCELOG_URL;
delete process.env.ONCELOG_URL;
try { new LedgerClient(); } catch (e) { errors.missing = [e instanceof ConfigurationError, e.code]; }
const dead = new LedgerClient({ url: process.env.DEAD_URL, attempts: 1 });
try { await dead.getExecution({ channelId: "c", keyName: "k" }); }
catch (e) { errors.dead = [e instanceof ServeUnreachableError, e.code, e.message.includes(process.env.DEAD_URL)]; }
console.log(JSON.stringify({ statuses: [first.status, again.status], calls, errors, url: Boolean(url) }));
